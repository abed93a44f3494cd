package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	obclient "github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/live"
)

// TestSecondConnectionOfADeviceReplacesTheFirstOnAnyNode: one connection
// per device, the newest wins, here or on another node.
func TestSecondConnectionOfADeviceReplacesTheFirstOnAnyNode(t *testing.T) {
	le := newLiveEnv(t, Config{})
	first := le.device(0, "bob", "phone")
	first.connect()
	again := le.device(0, "bob", "phone")
	again.connect()
	waitClosed(t, first, int(live.CloseReplaced))
	elsewhere := le.device(1, "bob", "phone")
	elsewhere.connect()
	waitClosed(t, again, int(live.CloseReplaced))
	if f := elsewhere.quiet(300*time.Millisecond, "ping"); len(f) != 0 {
		t.Fatalf("the newest connection got %s", f[0].Raw)
	}
	if elsewhere.live.Err() != nil {
		t.Fatalf("the newest connection ended: %v", elsewhere.live.Err())
	}
}

// TestAConnectionReplacedWhileItsNodesBusWasDownIsClosedAtTheNextHeartbeat:
// the word to close the older connection goes to its node by name; with
// that node's bus down it is lost, and the node learns from the presence
// registry instead, when it next extends the leases.
func TestAConnectionReplacedWhileItsNodesBusWasDownIsClosedAtTheNextHeartbeat(t *testing.T) {
	le := newLiveEnv(t, Config{Live: LiveConfig{Heartbeat: 200 * time.Millisecond, HeartbeatTimeout: time.Minute}})
	bus := le.busDropper(0)
	first := le.device(0, "bob", "phone")
	first.connect()
	bus.drop()
	elsewhere := le.device(1, "bob", "phone")
	elsewhere.connect()
	waitClosed(t, first, int(live.CloseReplaced))
	if elsewhere.live.Err() != nil {
		t.Fatalf("the newest connection ended: %v", elsewhere.live.Err())
	}
}

func waitClosed(t *testing.T, d *device, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, err := d.live.Next(ctx)
		if errors.Is(err, obclient.ErrLiveClosed) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s/%s was not closed", d.user, d.name)
		}
	}
	if got := d.live.CloseStatus(); got != code {
		t.Fatalf("%s/%s closed with %d (%v), want %d", d.user, d.name, got, d.live.Err(), code)
	}
}

// TestNodeRefusesConnectionsPastItsBound: 503 live_full, nothing upgraded.
func TestNodeRefusesConnectionsPastItsBound(t *testing.T) {
	le := newLiveEnv(t, Config{Live: LiveConfig{MaxConnections: 1}})
	le.device(0, "alice", "phone").connect()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := le.device(0, "bob", "phone").http.DialLive(ctx, obclient.LiveOptions{})
	var se *obclient.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusServiceUnavailable {
		t.Fatalf("a connection past the bound got %v, want 503", err)
	}
	le.device(1, "bob", "phone").connect() // the other node has room
}

// TestSilentClientIsClosedByTheHeartbeat: a peer that answers nothing is
// closed with live.CloseHeartbeat.
func TestSilentClientIsClosedByTheHeartbeat(t *testing.T) {
	le := newLiveEnv(t, Config{Live: LiveConfig{Heartbeat: 50 * time.Millisecond, HeartbeatTimeout: 200 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, strings.Replace(le.nodes[0].URL(), "http", "ws", 1)+"/v1/live",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + le.token("bob", "phone")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	start := time.Now()
	for {
		if _, _, err = ws.Read(ctx); err != nil {
			break // read (pings included) but never answer
		}
	}
	if got := websocket.CloseStatus(err); got != live.CloseHeartbeat {
		t.Fatalf("the silent client was closed with %v (%v), want %d", got, err, live.CloseHeartbeat)
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Fatalf("closed after %s, before the heartbeat timeout", time.Since(start))
	}
}

// TestBrowserTokenAsSubprotocolAndAsAuthFrame: the two ways a browser
// authenticates; a bad token in a first frame is closed with 4004.
func TestBrowserTokenAsSubprotocolAndAsAuthFrame(t *testing.T) {
	le := newLiveEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := le.device(0, "bob", "phone").http.DialLive(ctx, obclient.LiveOptions{TokenAsSubprotocol: true})
	if err != nil {
		t.Fatal(err)
	}
	if f, err := l.Next(ctx); err != nil || f.Type != "hello" || f.DeviceID != "phone" {
		t.Fatalf("subprotocol token: %v %s", err, f.Raw)
	}
	_ = l.Close()
	url := strings.Replace(le.nodes[1].URL(), "http", "ws", 1) + "/v1/live"
	for _, tc := range []struct {
		token string
		ok    bool
	}{{le.token("bob", "laptop"), true}, {"not-a-token", false}} {
		ws, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = ws.Write(ctx, websocket.MessageText, []byte(`{"type":"auth","token":"`+tc.token+`"}`))
		_, data, err := ws.Read(ctx)
		switch {
		case tc.ok && (err != nil || !strings.Contains(string(data), `"type":"hello"`)):
			t.Errorf("auth frame with a valid token: %v %s", err, data)
		case !tc.ok && websocket.CloseStatus(err) != live.CloseUnauthorized:
			t.Errorf("auth frame with a bad token: %v %s, want close %d", err, data, live.CloseUnauthorized)
		}
		ws.CloseNow()
	}
}

// TestUserRefusedConnectionsPastTheirBound: 429 too_many_connections once a
// user holds MaxPerUser connections on the node.
func TestUserRefusedConnectionsPastTheirBound(t *testing.T) {
	le := newLiveEnv(t, Config{Live: LiveConfig{MaxPerUser: 2}})
	le.device(0, "bob", "phone").connect()
	le.device(0, "bob", "laptop").connect()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := le.device(0, "bob", "tablet").http.DialLive(ctx, obclient.LiveOptions{})
	var se *obclient.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusTooManyRequests {
		t.Fatalf("a third connection of bob got %v, want 429", err)
	}
	le.device(0, "alice", "phone").connect() // other users are not held back
}

// TestEvictedDeviceIsToldToResyncOnConnect: a device pushed out by the
// user's newer devices learns it in its notice.
func TestEvictedDeviceIsToldToResyncOnConnect(t *testing.T) {
	le := newLiveEnv(t, Config{})
	le.produce(textMsg(liveDM, "dm-1", "alice", toPeer("bob")))
	eventually(t, "the message is sequenced", func() (bool, string) {
		var list conversationListJSON
		le.callOK(200, "GET", "/v1/conversations", le.token("bob", "old"), nil, &list)
		return len(list.Conversations) == 1, ""
	})
	ack := map[string]any{"acks": []map[string]any{{"conv_id": liveDM, "seq": 1}}}
	le.callOK(200, "POST", "/v1/ack", le.token("bob", "old"), ack, nil)
	for i := 0; i < 5; i++ { // five newer devices: "old" is the least recently used
		time.Sleep(3 * time.Millisecond) // devices are ordered by last use in ms
		le.callOK(200, "POST", "/v1/ack", le.token("bob", fmt.Sprintf("new%d", i)), ack, nil)
	}
	if _, n := le.device(0, "bob", "old").connect(); !n.Resync || n.Replay {
		t.Fatalf("the evicted device's notice is %s, want resync", n.Raw)
	}
	if _, n := le.device(0, "bob", "new4").connect(); n.Resync {
		t.Fatalf("a kept device's notice is %s", n.Raw)
	}
}
