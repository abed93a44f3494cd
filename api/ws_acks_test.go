package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	obclient "github.com/offlinebox/offlinebox/client"
)

// liveAckSetup sequences a direct message from alice to bob and returns
// its epoch, once bob's sync sees it.
func liveAckSetup(t *testing.T, le *liveEnv) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	le.produce(textMsg(liveDM, "dm-1", "alice", toPeer("bob")))
	var first obclient.SyncResponse
	eventually(t, "the message is sequenced", func() (bool, string) {
		var err error
		first, _, err = le.device(0, "bob", "sync").http.Sync(ctx, obclient.SyncRequest{})
		return err == nil && len(first.Conversations) == 1 && first.Conversations[0].MaxSeq == 1, fmt.Sprint(first, err)
	})
	return first.Conversations[0].Epoch
}

// TestAnAckAnsweredOnTheSocketIsInRedisOnceItsNodeClosedRightAfter: the
// ack is held for a flush a second away, the node closes at once, and
// the device's cursor is in Redis when Close returns.
func TestAnAckAnsweredOnTheSocketIsInRedisOnceItsNodeClosedRightAfter(t *testing.T) {
	le := newLiveEnv(t, Config{Live: LiveConfig{AckFlush: time.Second}})
	epoch := liveAckSetup(t, le)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	phone := le.device(1, "bob", "phone")
	phone.connect()
	if err := phone.live.Ack(ctx, []obclient.AckItem{{ConvID: liveDM, Seq: 1, Epoch: epoch}}, true); err != nil {
		t.Fatal(err)
	}
	if a := phone.next("acked"); a.Acked != 1 || a.Resync {
		t.Fatalf("the ack was answered %s", a.Raw)
	}
	le.nodes[1].server.Close()
	cur, err := le.router.DeviceCursors(ctx, "bob", "phone")
	if err != nil {
		t.Fatal(err)
	}
	if c := cur[liveDM]; c.Seq != 1 || c.Epoch != epoch {
		t.Fatalf("after the close, the phone's cursor is %+v, want seq 1 of epoch %d", c, epoch)
	}
}

// TestAcksOfOneFlushKeepTheHighestSeq: a device's acks within one flush
// are written as one, the highest.
func TestAcksOfOneFlushKeepTheHighestSeq(t *testing.T) {
	le := newLiveEnv(t, Config{Live: LiveConfig{AckFlush: 300 * time.Millisecond}})
	epoch := liveAckSetup(t, le)
	le.produce(textMsg(liveDM, "dm-2", "alice", toPeer("bob")))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eventually(t, "the second message is sequenced", func() (bool, string) {
		got, _, err := le.device(0, "bob", "sync").http.Sync(ctx, obclient.SyncRequest{})
		return err == nil && len(got.Conversations) == 1 && got.Conversations[0].MaxSeq == 2, fmt.Sprint(got, err)
	})
	phone := le.device(0, "bob", "phone")
	phone.connect()
	for _, seq := range []uint64{1, 2, 1} {
		if err := phone.live.Ack(ctx, []obclient.AckItem{{ConvID: liveDM, Seq: seq, Epoch: epoch}}, true); err != nil {
			t.Fatal(err)
		}
		phone.until("acked", func(obclient.Frame) bool { return true })
	}
	eventually(t, "the cursor is written", func() (bool, string) {
		cur, err := le.router.DeviceCursors(ctx, "bob", "phone")
		return err == nil && cur[liveDM].Seq == 2, fmt.Sprint(cur, err)
	})
	time.Sleep(400 * time.Millisecond) // a later flush would have written a lower seq by now
	if cur, _ := le.router.DeviceCursors(ctx, "bob", "phone"); cur[liveDM].Seq != 2 {
		t.Fatalf("the cursor went back to %+v", cur[liveDM])
	}
}

// TestADeviceEvictedWhileConnectedIsToldToResyncAfterItsNextAck: its acks
// are answered before they are written, so what the write learns (the
// device had been evicted) comes in an acked frame after it.
func TestADeviceEvictedWhileConnectedIsToldToResyncAfterItsNextAck(t *testing.T) {
	le := newLiveEnv(t, Config{})
	epoch := liveAckSetup(t, le)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old := le.device(0, "bob", "old")
	old.connect()
	ackItems := []obclient.AckItem{{ConvID: liveDM, Seq: 1, Epoch: epoch}}
	if err := old.live.Ack(ctx, ackItems, true); err != nil {
		t.Fatal(err)
	}
	old.next("acked")
	eventually(t, "the device is registered", func() (bool, string) {
		cur, err := le.router.DeviceCursors(ctx, "bob", "old")
		return err == nil && cur[liveDM].Seq == 1, fmt.Sprint(cur, err)
	})
	ack := map[string]any{"acks": []map[string]any{{"conv_id": liveDM, "seq": 1}}}
	for i := 0; i < 5; i++ { // five newer devices: "old" is the least recently used
		time.Sleep(3 * time.Millisecond) // devices are ordered by last use in ms
		le.callOK(200, "POST", "/v1/ack", le.token("bob", fmt.Sprintf("new%d", i)), ack, nil)
	}
	if ev, err := le.router.WasEvicted(ctx, "bob", "old"); err != nil || !ev {
		t.Fatalf("the old device was not evicted: %v %v", ev, err)
	}
	if err := old.live.Ack(ctx, ackItems, false); err != nil {
		t.Fatal(err)
	}
	f := old.until("acked", func(obclient.Frame) bool { return true })
	if !f.Resync || f.Acked != 1 {
		t.Fatalf("the evicted device's ack was answered %s, want resync", f.Raw)
	}
}
