package live

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// TestSlowConsumerIsClosedAndQoS0IsDroppedFirst works on the send queue
// of a connection whose writes do not drain (its writer is held, as a
// client that stopped reading holds it once the socket buffers are full).
func TestSlowConsumerIsClosedAndQoS0IsDroppedFirst(t *testing.T) {
	h := testHub(t, Config{MaxQueueBytes: 4096})
	accepted := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		accepted <- ws
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, _, err := websocket.Dial(ctx, strings.Replace(srv.URL, "http", "ws", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.CloseNow()
	c := newLiveConn(h, <-accepted, "bob", "phone", "c1")
	frame := []byte(`{"type":"ephemeral","pad":"` + strings.Repeat("x", 900) + `"}`)
	for i := 0; i < 2; i++ {
		c.send(frame, false) // stored messages: kept
	}
	for i := 0; i < 5; i++ {
		c.send(frame, true) // QoS 0 beyond half the queue: dropped
	}
	c.mu.Lock()
	queued, closed := len(c.queue), c.closed
	c.mu.Unlock()
	if queued != 2 || closed {
		t.Fatalf("queue holds %d frames (closed %v), want the 2 stored ones", queued, closed)
	}
	for i := 0; i < 3; i++ {
		c.send(frame, false)
	}
	c.mu.Lock()
	closed = c.closed
	c.mu.Unlock()
	if !closed {
		t.Fatal("a queue over its bound did not close the connection")
	}
	_, _, err = cli.Read(ctx)
	if got := websocket.CloseStatus(err); got != CloseSlowConsumer {
		t.Fatalf("the client saw %v (%v), want close %d", got, err, CloseSlowConsumer)
	}
}

// TestAConnectionWhosePushesWereAllAckedIsPushedAgainAfterItsNextPush: a
// connection leaves the hub's set of those with pending pushes once none
// is left, and its next push puts it back, so that push too comes again
// on the schedule.
func TestAConnectionWhosePushesWereAllAckedIsPushedAgainAfterItsNextPush(t *testing.T) {
	h := testHub(t, Config{Repush: []time.Duration{time.Minute, time.Minute}})
	c := newLiveConn(h, nil, "bob", "phone", "c1") // never started: frames only queue
	listed := func() bool {
		return h.withPend.has(c)
	}
	msg := func(seq uint64) *schemas.Sequenced {
		return &schemas.Sequenced{Seq: seq, Epoch: 1, Message: &schemas.Message{ConvId: "dm-a-b", Sender: "alice", Kind: schemas.Kind_KIND_MESSAGE}}
	}
	c.push(msg(1))
	if !listed() {
		t.Fatal("a connection with a pending push is not in the hub's set")
	}
	c.acknowledgedAll([]redisstore.AckItem{{Conv: "dm-a-b", Seq: 1, Epoch: 1}})
	now := time.Now()
	if items := c.due(now.Add(2 * time.Minute)); len(items) != 0 || listed() {
		t.Fatalf("after its only push was acked: %d due, listed %v; want none and out of the set", len(items), listed())
	}
	c.push(msg(2))
	if !listed() {
		t.Fatal("the next push did not put the connection back in the set")
	}
	items := c.due(time.Now().Add(2 * time.Minute))
	if len(items) != 1 || items[0].sq.GetSeq() != 2 || items[0].attempt != 2 {
		t.Fatalf("due after the wait: %+v, want seq 2 for its second attempt", items)
	}
}

// A catch-up's read that a newer catch-up of the same conversation has
// replaced (the connection left it and listened again meanwhile) neither
// pushes nor closes the newer one; the newer one's read does.
func TestAStaleCatchUpReadLeavesTheNewerCatchUpOpen(t *testing.T) {
	h := testHub(t, Config{})
	c := newLiveConn(h, nil, "bob", "phone", "c1") // never started: frames only queue
	listenWith := func(cu *catchUp) {
		h.index.mu.Lock()
		c.mu.Lock()
		defer h.index.mu.Unlock()
		defer c.mu.Unlock()
		if !h.addListenerLocked(c, "team", 0, cu) {
			t.Fatal("the connection could not listen")
		}
	}
	state := func() (*catchUp, int) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.catching["team"], len(c.pending)
	}
	read := []*schemas.Sequenced{{Seq: 1, Epoch: 1, Message: &schemas.Message{ConvId: "team", Sender: "alice", Kind: schemas.Kind_KIND_MESSAGE}}}
	old := &catchUp{}
	listenWith(old)
	// left, as unlisten leaves the connection (this hub runs no bus)
	c.mu.Lock()
	delete(c.groups, "team")
	c.caughtUpLocked("team")
	c.mu.Unlock()
	newer := &catchUp{}
	listenWith(newer)

	h.finish(catchUpDone{c: c, conv: "team", cu: old, push: read})
	if cu, pushed := state(); cu != newer || pushed != 0 {
		t.Fatalf("after the stale read: catching %p (newer %p), %d pushed; want the newer one open and nothing pushed", cu, newer, pushed)
	}
	h.finish(catchUpDone{c: c, conv: "team", cu: newer, push: read})
	if cu, pushed := state(); cu != nil || pushed != 1 {
		t.Fatalf("after the newer read: catching %p, %d pushed; want it closed and its record pushed", cu, pushed)
	}
}
