package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/live"
)

// liveOutcome is how one connection attempt ended: "ok" (hello came), an
// HTTP status of the refused upgrade ("http 429"), or a close code
// ("close 4010").
type liveOutcome string

// dialLive opens the live channel of node as user/device, the token in
// the header or, with frame, in an auth frame after the upgrade; it waits
// for hello or the refusal. An open connection is closed at the test's end.
func (le *liveEnv) dialLive(t *testing.T, node int, user, dev string, frame bool) liveOutcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	url := strings.Replace(le.nodes[node].URL(), "http", "ws", 1) + "/v1/live"
	tok := le.token(user, dev)
	opts := &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}}
	if frame {
		opts = nil
	}
	ws, resp, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		if resp != nil {
			return liveOutcome(fmt.Sprintf("http %d", resp.StatusCode))
		}
		t.Fatalf("%s/%s dials: %v", user, dev, err)
	}
	t.Cleanup(func() { _ = ws.CloseNow() })
	if frame {
		if err := ws.Write(ctx, websocket.MessageText, []byte(`{"type":"auth","token":"`+tok+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	_, data, err := ws.Read(ctx)
	switch {
	case err == nil && strings.Contains(string(data), `"type":"hello"`):
		// Keep reading (pings answered by nobody is fine: the test is short).
		go func() {
			for {
				if _, _, err := ws.Read(context.Background()); err != nil {
					return
				}
			}
		}()
		return "ok"
	case websocket.CloseStatus(err) != -1:
		return liveOutcome(fmt.Sprintf("close %d", websocket.CloseStatus(err)))
	}
	t.Fatalf("%s/%s got %s (%v)", user, dev, data, err)
	return ""
}

// settled waits until node 0 counts total connections, waiting of them
// waiting for their auth frame (a refused one gives its place back once
// its close handshake is done).
func (le *liveEnv) settled(t *testing.T, total, waiting int) {
	t.Helper()
	eventually(t, fmt.Sprintf("the node counts %d connections, %d waiting", total, waiting), func() (bool, string) {
		n, w := le.server.live.Connections()
		return n == total && w == waiting, fmt.Sprintf("%d, %d waiting", n, w)
	})
}

func refusedCount(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "offlinebox_live_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestLiveAdmissionHoldsTheCapsHoweverAConnectionAuthenticates: eight
// connections of one user at once, half with the token on the upgrade and
// half in an auth frame, against MaxPerUser 2 and MaxConnections 3: two
// get in, the others are refused with the documented answers (429 on the
// upgrade, close 4010 after an auth frame); the node's bound then holds
// for everyone, a connection waiting for its auth frame counted.
func TestLiveAdmissionHoldsTheCapsHoweverAConnectionAuthenticates(t *testing.T) {
	reg := prometheus.NewRegistry()
	le := newLiveEnvWith(t, Config{Live: LiveConfig{MaxPerUser: 2, MaxConnections: 3}}, reg)
	got := map[liveOutcome]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := le.dialLive(t, 0, "bob", fmt.Sprintf("dev-%d", i), i%2 == 1)
			mu.Lock()
			got[o]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	// Connections waiting for their auth frame hold places of the node
	// too, so some of the eight may find it full (503) rather than bob's
	// bound.
	if got["ok"] != 2 || got["http 429"]+got["close 4010"]+got["http 503"] != 6 {
		t.Fatalf("8 connections of bob against MaxPerUser 2 ended %v, want 2 ok and 6 refused (429, close 4010 or 503)", got)
	}
	if n := refusedCount(t, reg, live.RefusedUserFull) + refusedCount(t, reg, live.RefusedNodeFull); n != 6 {
		t.Errorf("refused{user_full} + refused{node_full} = %v, want 6", n)
	}
	le.settled(t, 2, 0)
	for _, tc := range []struct {
		frame bool
		want  liveOutcome
	}{{false, "http 429"}, {true, "close 4010"}} {
		if o := le.dialLive(t, 0, "bob", "dev-9", tc.frame); o != tc.want {
			t.Errorf("bob's third device (auth frame %v) ended %s, want %s", tc.frame, o, tc.want)
		}
		le.settled(t, 2, 0)
	}
	if o := le.dialLive(t, 0, "alice", "phone", true); o != "ok" {
		t.Fatalf("alice's connection, the node's third, ended %s", o)
	}
	for _, frame := range []bool{false, true} {
		if o := le.dialLive(t, 0, "carol", "phone", frame); o != "http 503" {
			t.Errorf("a fourth connection (auth frame %v) ended %s, want http 503", frame, o)
		}
	}
	if n := refusedCount(t, reg, live.RefusedNodeFull) - float64(got["http 503"]); n != 2 {
		t.Errorf("refused{node_full} past the eight = %v, want 2", n)
	}
	le.settled(t, 3, 0)
}

// TestConnectionsWaitingForTheirAuthFrameAreBoundedPerAddress: upgrades
// that send nothing hold a place each, at most MaxUnauthenticatedPerAddr
// from one address (more are refused with 429 before the upgrade), and
// count against the node's bound; one that authenticates frees its
// address's place.
func TestConnectionsWaitingForTheirAuthFrameAreBoundedPerAddress(t *testing.T) {
	reg := prometheus.NewRegistry()
	le := newLiveEnvWith(t, Config{Live: LiveConfig{MaxUnauthenticatedPerAddr: 4, MaxConnections: 6}}, reg)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	url := strings.Replace(le.nodes[0].URL(), "http", "ws", 1) + "/v1/live"
	var open []*websocket.Conn
	refused := 0
	for range 10 {
		ws, resp, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("an upgrade past the address's bound: %v, want 429", err)
			}
			refused++
			continue
		}
		defer ws.CloseNow()
		open = append(open, ws)
	}
	if len(open) != 4 || refused != 6 {
		t.Fatalf("10 upgrades without a token: %d open, %d refused, want 4 and 6", len(open), refused)
	}
	if n := refusedCount(t, reg, live.RefusedAddressFull); n != 6 {
		t.Errorf("refused{address_full} = %v, want 6", n)
	}
	if total, waiting := le.server.live.Connections(); total != 4 || waiting != 4 {
		t.Errorf("the node counts %d connections, %d waiting, want 4 and 4", total, waiting)
	}
	// Two with tokens fill the node: 4 waiting + 2.
	for _, d := range []string{"phone", "laptop"} {
		if o := le.dialLive(t, 0, "bob", d, false); o != "ok" {
			t.Fatalf("bob/%s ended %s", d, o)
		}
	}
	if o := le.dialLive(t, 0, "bob", "tablet", false); o != "http 503" {
		t.Fatalf("a connection past the node's bound, waiting ones counted, ended %s, want http 503", o)
	}
	// One authenticates: its address may open one more waiting upgrade,
	// but the node is still full.
	tok := le.token("alice", "phone")
	if err := open[0].Write(ctx, websocket.MessageText, []byte(`{"type":"auth","token":"`+tok+`"}`)); err != nil {
		t.Fatal(err)
	}
	if _, data, err := open[0].Read(ctx); err != nil || !strings.Contains(string(data), `"hello"`) {
		t.Fatalf("the waiting connection authenticates: %v %s", err, data)
	}
	if _, waiting := le.server.live.Connections(); waiting != 3 {
		t.Errorf("%d waiting after one authenticated, want 3", waiting)
	}
	_ = open[1].Close(websocket.StatusNormalClosure, "")
	le.settled(t, 5, 2)
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatalf("an upgrade once a place is free: %v", err)
	}
	defer ws.CloseNow()
}

// TestAUsersDevicesAreBoundedOnEveryNodeTogether: MaxDevices counts the
// user's devices connected to any node; one more is closed with 4011, and
// a device already connected reconnects whatever the count.
func TestAUsersDevicesAreBoundedOnEveryNodeTogether(t *testing.T) {
	reg := prometheus.NewRegistry()
	le := newLiveEnvWith(t, Config{Live: LiveConfig{MaxDevices: 3}}, reg)
	for i, d := range []string{"phone", "laptop", "tablet"} {
		if o := le.dialLive(t, i%2, "bob", d, i == 1); o != "ok" {
			t.Fatalf("bob/%s ended %s", d, o)
		}
	}
	for i, frame := range []bool{false, true} {
		if o := le.dialLive(t, i, "bob", fmt.Sprintf("watch-%d", i), frame); o != "close 4011" {
			t.Errorf("a fourth device of bob on node %d ended %s, want close 4011", i, o)
		}
	}
	if o := le.dialLive(t, 1, "bob", "phone", false); o != "ok" {
		t.Errorf("a connected device reconnecting elsewhere ended %s, want ok", o)
	}
	if n := refusedCount(t, reg, live.RefusedDevicesFull); n != 1 {
		t.Errorf("refused{devices_full} on node 0 = %v, want 1", n)
	}
}
