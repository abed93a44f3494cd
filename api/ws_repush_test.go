package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	obclient "github.com/offlinebox/offlinebox/client"
)

// TestUnackedPushComesBackFiveTimesOnTheScheduleThenWaitsForThePull: a
// device that never acks gets the message 1 + 5 times, each after the
// configured wait, then never again; when it reconnects its notice names
// the conversation and sync returns the message once.
func TestUnackedPushComesBackFiveTimesOnTheScheduleThenWaitsForThePull(t *testing.T) {
	schedule := []time.Duration{100 * time.Millisecond, 150 * time.Millisecond, 200 * time.Millisecond,
		250 * time.Millisecond, 300 * time.Millisecond}
	le := newLiveEnv(t, Config{Live: LiveConfig{Repush: schedule, OfflineThreshold: time.Millisecond}})
	bob := le.device(0, "bob", "phone")
	bob.connect()
	start := time.Now()
	le.produce(textMsg(liveDM, "dm-1", "alice", toPeer("bob")))

	var times []time.Duration
	for i := 0; i < 1+len(schedule); i++ {
		f := bob.until("message", func(f obclient.Frame) bool { return true })
		if f.Message.ClientMsgID != "dm-1" || f.Attempt != i+1 {
			t.Fatalf("push %d is %s, want dm-1 attempt %d", i+1, f.Raw, i+1)
		}
		times = append(times, time.Since(start))
	}
	// Each push again is due its wait after the one before, counted from
	// when the first was sent, which is after the produce. Frames may reach
	// the device late (a late first one would make the next look early),
	// so the schedule is checked from the produce: push i+2 can never
	// arrive before the waits up to it have passed.
	var due time.Duration
	for i, wait := range schedule {
		due += wait
		if since := times[i+1]; since < due {
			t.Errorf("push %d came %s after the produce, before the schedule's %s", i+2, since, due)
		}
	}
	if extra := bob.quiet(time.Second, "ping"); len(extra) != 0 {
		t.Fatalf("after the last push again the device still got %s", extra[0].Raw)
	}
	_ = bob.live.Close()
	// Away longer than the offline threshold, and long enough that the
	// server has seen the close before the device comes back.
	time.Sleep(100 * time.Millisecond)

	_, notice := bob.connect()
	if notice.Replay || len(notice.Conversations) != 1 || notice.Conversations[0].ConvID != liveDM ||
		notice.Conversations[0].DeviceAckedSeq != 0 || notice.Conversations[0].MaxSeq != 1 {
		t.Fatalf("the notice after reconnecting is %s, want %s to pull from 0 to 1", notice.Raw, liveDM)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, _, err := bob.http.Sync(ctx, obclient.SyncRequest{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range got.Conversations {
		for _, m := range c.Messages {
			if m.ClientMsgID == "dm-1" {
				n++
			}
		}
	}
	if n != 1 {
		t.Fatalf("sync returned dm-1 %d times: %+v", n, got)
	}
	if extra := bob.quiet(300*time.Millisecond, "ping"); len(extra) != 0 {
		t.Fatalf("the reconnected device was pushed %s", extra[0].Raw)
	}
}

// TestAckedPushIsNeverPushedAgain: an ack on the socket, or through POST
// /v1/ack, stops the pushes again.
func TestAckedPushIsNeverPushedAgain(t *testing.T) {
	schedule := []time.Duration{150 * time.Millisecond, 150 * time.Millisecond}
	le := newLiveEnv(t, Config{Live: LiveConfig{Repush: schedule}})
	for _, viaHTTP := range []bool{false, true} {
		t.Run(fmt.Sprintf("http=%v", viaHTTP), func(t *testing.T) {
			dev := fmt.Sprintf("phone-%v", viaHTTP)
			bob := le.device(0, "bob", dev)
			bob.t = t
			bob.connect()
			id := "dm-" + dev
			le.produce(textMsg(liveDM, id, "alice", toPeer("bob")))
			f := bob.until("message", func(f obclient.Frame) bool { return f.Message.ClientMsgID == id })
			ack := []obclient.AckItem{{ConvID: liveDM, Seq: f.Message.Seq, Epoch: f.Message.Epoch}}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if viaHTTP {
				if err := bob.http.Ack(ctx, ack); err != nil {
					t.Fatal(err)
				}
			} else if err := bob.live.Ack(ctx, ack, false); err != nil {
				t.Fatal(err)
			}
			for _, g := range bob.quiet(600*time.Millisecond, "ping", "acked") {
				if g.Type == "message" && g.Message.ClientMsgID == id {
					t.Fatalf("pushed again after the ack: %s", g.Raw)
				}
			}
		})
	}
}
