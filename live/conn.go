package live

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// liveConn is one device's live connection. Idle, it costs the goroutine
// that reads it and nothing else: frames queue in a bounded byte budget
// and a writer goroutine runs only while there is something to write.
type liveConn struct {
	hub    *liveHub
	ws     *websocket.Conn
	cork   *corkConn // the socket under ws (nil: every frame is a write of its own)
	user   string
	device string
	id     string

	lastSeen atomic.Int64 // unix ms of the last frame from the client
	// leased: the presence registry named this connection for its device
	// (SetPresence returned); an entry naming another one after it means
	// a newer connection of the device took it.
	leased atomic.Bool
	// ackRegistered: a flush of this connection's acks registered the
	// device in its user's device set (ack_cursor.lua), so later flushes
	// raise its cursor alone (ack_cursor_raise.lua).
	ackRegistered atomic.Bool
	// tokenEnd: the connection is closed then (unix ms), its token's exp
	// plus the leeway, unless a reauth moves it (token.go).
	tokenEnd atomic.Int64
	// tokenIssued: its token's iat (unix ms), which a revocation is
	// compared with.
	tokenIssued atomic.Int64
	// typing is the connection's ephemeral budget (budget.go).
	typing connBudget

	// mu guards every field below: the send queue and its writer's
	// state, what the device acked and the connection learnt, its pending
	// pushes, and the conversations it listens to with their catch-ups
	// (a catchUp has no lock of its own; it is read and changed under
	// the mu of the connection catching up). They share it because a
	// push checks and changes them together, under one hold (deliver).
	// It is taken inside the hub's index lock (liveIndex.mu) when a
	// holder of that changes groups; a holder of mu may take the pending
	// set's lock (pendingSet.mu) and no other, never the index's. No
	// socket write, store or bus call is made while it is held: the
	// queue's work (a write to start, a close) is left to after
	// (queueWork) and done once it is released.
	mu      sync.Mutex
	queue   []queued
	bytes   int
	writing bool
	ready   bool // hello and notice are queued; writes may start
	closed  bool
	acked   map[string]cursorAt  // conv → what the device acked
	known   map[string]knownConv // conv → what this connection learnt of it
	pending map[pushKey]*pendingPush
	// nextDue: no pending push is due before it (zero: look), so the
	// hub's tick passes a connection with nothing due without a scan.
	nextDue time.Time
	// listed: c is in the hub's withPend.
	listed bool
	// groups are the conversations this connection listens to, each
	// with the seq its user joined at: what the channel carries up to it
	// is not theirs (the push stage may lag behind a join).
	groups map[string]uint64
	// catching are those of groups whose catch-up is not done: their
	// channel's records wait (catchup.go).
	catching map[string]*catchUp
}

type queued struct {
	data      []byte
	ephemeral bool
	receipt   string // conv of a receipt frame, replaced by a newer one
}

type cursorAt struct{ epoch, seq uint64 }

// knownConv is what a connection knows of a conversation from what it was
// pushed or told: its acks up to seq need no store read to be checked.
type knownConv struct {
	epoch, seq uint64
	large      bool
}

// learnLocked raises what the connection knows of conv to k when k is
// further (a newer epoch, or a higher seq of the same). c.mu is held.
func (c *liveConn) learnLocked(conv string, k knownConv) {
	if old := c.known[conv]; old.epoch < k.epoch || (old.epoch == k.epoch && old.seq < k.seq) {
		c.known[conv] = k
	}
}

type pushKey struct {
	conv string
	seq  uint64
}

type repush struct {
	sq      *schemas.Sequenced
	attempt int
}

// pendingPush is a pushed message the device has not acked yet.
type pendingPush struct {
	sq       *schemas.Sequenced
	epoch    uint64
	attempts int // pushes so far
	next     time.Time
	first    time.Time
}

func newLiveConn(h *liveHub, ws *websocket.Conn, user, device, id string) *liveConn {
	c := &liveConn{hub: h, ws: ws, user: user, device: device, id: id,
		acked: map[string]cursorAt{}, known: map[string]knownConv{}, pending: map[pushKey]*pendingPush{}, groups: map[string]uint64{}}
	c.lastSeen.Store(time.Now().UnixMilli())
	return c
}

// isOpen reports whether c is not closed yet.
func (c *liveConn) isOpen() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.closed
}

// send queues a frame. An ephemeral frame is the first thing dropped when
// the connection is slow; anything else that does not fit closes it.
func (c *liveConn) send(data []byte, ephemeral bool) {
	c.enqueue(queued{data: data, ephemeral: ephemeral}, false)
}

// sendFirst queues a frame ahead of everything (hello, notice).
func (c *liveConn) sendFirst(frames ...[]byte) {
	c.mu.Lock()
	head := make([]queued, 0, len(frames)+len(c.queue))
	for _, f := range frames {
		head = append(head, queued{data: f})
		c.bytes += len(f)
	}
	c.queue = append(head, c.queue...)
	c.mu.Unlock()
}

// sendReceipt queues a receipt frame, replacing one of the same
// conversation still waiting: receipts coalesce.
func (c *liveConn) sendReceipt(conv string, data []byte) {
	c.enqueue(queued{data: data, receipt: conv}, true)
}

func (c *liveConn) enqueue(q queued, coalesce bool) {
	c.mu.Lock()
	w := c.enqueueLocked(q, coalesce)
	c.mu.Unlock()
	c.after(w)
}

// queueWork is what an enqueue leaves to do once c.mu is released.
type queueWork uint8

const (
	queueNothing    queueWork = iota
	queueStartWrite           // a writer is to start (c.writing was set)
	queueSlowClose            // the frame did not fit: the connection is closed
)

// enqueueLocked queues q. c.mu is held; the caller runs c.after with the
// result once it released it.
func (c *liveConn) enqueueLocked(q queued, coalesce bool) queueWork {
	if c.closed {
		return queueNothing
	}
	if coalesce {
		for i := range c.queue {
			if c.queue[i].receipt == q.receipt {
				c.bytes += len(q.data) - len(c.queue[i].data)
				c.queue[i] = q
				c.hub.metrics.receiptsCoalesced.Inc()
				return queueNothing
			}
		}
	}
	limit := c.hub.cfg.MaxQueueBytes
	if q.ephemeral && c.bytes+len(q.data) > limit/2 {
		c.hub.metrics.ephemeralDropped.Inc()
		return queueNothing
	}
	if c.bytes+len(q.data) > limit {
		c.dropEphemeralLocked()
	}
	if c.bytes+len(q.data) > limit {
		return queueSlowClose
	}
	c.queue = append(c.queue, q)
	c.bytes += len(q.data)
	if c.startableLocked() {
		c.writing = true
		return queueStartWrite
	}
	return queueNothing
}

// after does what an enqueue left to do; c.mu is not held.
func (c *liveConn) after(w queueWork) {
	switch w {
	case queueStartWrite:
		if !c.hub.writes.take(c) {
			c.writeNow()
		}
	case queueSlowClose:
		c.hub.metrics.slowCloses.Inc()
		c.close(CloseSlowConsumer, "send queue full; sync and reconnect")
	}
}

func (c *liveConn) dropEphemeralLocked() {
	kept := c.queue[:0]
	for _, q := range c.queue {
		if q.ephemeral && q.receipt == "" {
			c.bytes -= len(q.data)
			c.hub.metrics.ephemeralDropped.Inc()
			continue
		}
		kept = append(kept, q)
	}
	c.queue = kept
}

// start lets writes begin once hello and the notice are queued.
func (c *liveConn) start() {
	c.mu.Lock()
	c.ready = true
	w := queueNothing
	if c.startableLocked() {
		c.writing = true
		w = queueStartWrite
	}
	c.mu.Unlock()
	c.after(w)
}

// startableLocked: frames wait and no writer runs. c.mu is held.
func (c *liveConn) startableLocked() bool {
	return c.ready && !c.writing && len(c.queue) > 0 && !c.closed
}

// close ends the connection with code (once); it reports whether this
// call ended it.
func (c *liveConn) close(code websocket.StatusCode, reason string) (closed bool) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	c.closed = true
	c.queue = nil
	c.mu.Unlock()
	go func() { _ = c.ws.Close(code, reason) }()
	return true
}

// push sends a stored message unless the device holds it already, and
// tracks it for pushing again until acked.
func (c *liveConn) push(sq *schemas.Sequenced) { c.pushFrame(sq, nil, false) }

// pushFrame is push with the first attempt's frame already encoded
// (shared by every connection an envelope names).
func (c *liveConn) pushFrame(sq *schemas.Sequenced, frame []byte, large bool) {
	if frame == nil {
		frame = messageFrame(sq, 1)
	}
	c.mu.Lock()
	w := c.pushLocked(sq, frame, large)
	c.mu.Unlock()
	c.after(w)
}

// deliver is admit and pushFrame under one hold of c.mu: a record of a
// conversation's channel, pushed to every connection listening to it.
func (c *liveConn) deliver(conv string, sq *schemas.Sequenced, frame []byte, large bool) {
	c.mu.Lock()
	w := queueNothing
	if c.admitLocked(conv, sq, frame, large) {
		w = c.pushLocked(sq, frame, large)
	}
	c.mu.Unlock()
	c.after(w)
}

// pushLocked records what the push tells of its conversation, tracks it
// for pushing again and queues its frame, unless the device acked it or
// it is pending already. c.mu is held.
func (c *liveConn) pushLocked(sq *schemas.Sequenced, frame []byte, large bool) queueWork {
	conv, seq, epoch := sq.GetMessage().GetConvId(), sq.GetSeq(), sq.GetEpoch()
	c.learnLocked(conv, knownConv{epoch: epoch, seq: seq, large: large || c.known[conv].large})
	if a, ok := c.acked[conv]; ok && a.epoch == epoch && a.seq >= seq {
		c.hub.metrics.pushSkipped.Inc()
		return queueNothing
	}
	k := pushKey{conv, seq}
	if _, ok := c.pending[k]; ok {
		return queueNothing
	}
	if len(c.pending) < c.hub.cfg.MaxPending && len(c.hub.cfg.Repush) > 0 {
		now := time.Now()
		next := now.Add(c.hub.cfg.Repush[0])
		c.pending[k] = &pendingPush{sq: sq, epoch: epoch, attempts: 1, next: next, first: now}
		if len(c.pending) == 1 || next.Before(c.nextDue) {
			c.nextDue = next
		}
		c.listPendingLocked()
	} else {
		c.hub.metrics.fallbacks.WithLabelValues("pending_full").Inc()
	}
	c.hub.metrics.firstPushes.Inc()
	w := c.enqueueLocked(queued{data: frame}, false)
	if !large && !c.known[conv].large && !c.closed && c.hub.pushes != nil {
		c.hub.pushes.add(conv, epoch, c.user, sq.GetMessage().GetSender(), seq)
	}
	return w
}

// listPendingLocked puts c in the hub's set of connections with pushes
// to look at on its ticks, once. c.mu is held (the set's lock is taken
// inside it, never the other way round).
func (c *liveConn) listPendingLocked() {
	if c.listed {
		return
	}
	c.listed = true
	c.hub.withPend.add(c)
}

// acknowledgedAll raises what the device acked and forgets the pushes
// the items cover, under one hold of c.mu and in one pass over the
// pending pushes; it returns the senders of the pushes it forgot (conv →
// sender → their newest seq; nil when none).
func (c *liveConn) acknowledgedAll(acks []redisstore.AckItem) map[string]map[string]uint64 {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range acks {
		if a, ok := c.acked[it.Conv]; !ok || it.Epoch > a.epoch || (it.Epoch == a.epoch && it.Seq > a.seq) {
			c.acked[it.Conv] = cursorAt{it.Epoch, it.Seq}
		}
	}
	var senders map[string]map[string]uint64
	for k, p := range c.pending {
		if !coveredBy(acks, k, p.epoch) {
			continue
		}
		c.hub.metrics.pushToAck.Observe(now.Sub(p.first).Seconds())
		c.hub.metrics.delivery.confirmed(now, p.sq.GetWriteTimeMs())
		delete(c.pending, k)
		if senders == nil {
			senders = map[string]map[string]uint64{}
		}
		snd := p.sq.GetMessage().GetSender()
		if senders[k.conv] == nil {
			senders[k.conv] = map[string]uint64{}
		}
		senders[k.conv][snd] = max(senders[k.conv][snd], k.seq)
	}
	return senders
}

// coveredBy: an item of acks covers the push k of epoch.
func coveredBy(acks []redisstore.AckItem, k pushKey, epoch uint64) bool {
	for _, it := range acks {
		if it.Conv == k.conv && it.Epoch == epoch && k.seq <= it.Seq {
			return true
		}
	}
	return false
}

// knownAccess vouches for acks of what this connection was pushed or
// told, without a store read; nil when any item needs the full check.
func (c *liveConn) knownAccess(items []edge.SeqItem) map[string]redisstore.ConvAccess {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]redisstore.ConvAccess, len(items))
	for _, it := range items {
		k, ok := c.known[it.Conv]
		if !ok || it.Seq > k.seq || (it.Epoch != 0 && it.Epoch != k.epoch) {
			return nil
		}
		out[it.Conv] = redisstore.ConvAccess{Conv: it.Conv, Exists: true, Member: true, Seq: k.seq, Epoch: k.epoch, Large: k.large}
	}
	return out
}

// due takes the pushes whose wait ran out; those pushed for the last time
// leave the pending set (the next pull takes over).
func (c *liveConn) due(now time.Time) []repush {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Before(c.nextDue) {
		return nil
	}
	var out []repush
	var next time.Time
	for k, p := range c.pending {
		if now.Before(p.next) {
			if next.IsZero() || p.next.Before(next) {
				next = p.next
			}
			continue
		}
		p.attempts++
		out = append(out, repush{sq: p.sq, attempt: p.attempts})
		if p.attempts > len(c.hub.cfg.Repush) {
			delete(c.pending, k)
			c.hub.metrics.fallbacks.WithLabelValues("repush_exhausted").Inc()
			continue
		}
		p.next = now.Add(c.hub.cfg.Repush[p.attempts-1])
		if next.IsZero() || p.next.Before(next) {
			next = p.next
		}
	}
	c.nextDue = next
	if len(c.pending) == 0 && c.listed {
		// Under c.mu, as the listing: a push meanwhile lists c again.
		c.listed = false
		c.hub.withPend.remove(c)
	}
	return out
}

// unknownJoin stands for a join not read yet: the channel's records wait
// meanwhile (what is sequenced before the read is in the notice).
const unknownJoin = ^uint64(0)

// raiseFloorLocked raises c's floor in conv (a conversation it listens
// to) to floor, when both are known. c.mu is held.
func (c *liveConn) raiseFloorLocked(conv string, floor uint64) {
	if cur, ok := c.groups[conv]; ok && cur != unknownJoin && floor != unknownJoin && floor > cur {
		c.groups[conv] = floor
	}
}

// caughtUpIfLocked ends c's catch-up on conv if it is cu, and reports
// whether it was: a newer one replaces it when the connection left conv
// and listened again meanwhile. c.mu is held.
func (c *liveConn) caughtUpIfLocked(conv string, cu *catchUp) bool {
	if cu == nil || c.catching[conv] != cu {
		return false
	}
	c.caughtUpLocked(conv)
	return true
}

// caughtUpLocked ends c's catch-up on conv and returns it (nil: none
// was running). The map goes with the last one: a connection catches up
// on its conversations at connect and then seldom again, and an idle
// connection keeps no empty map. c.mu is held.
func (c *liveConn) caughtUpLocked(conv string) *catchUp {
	cu := c.catching[conv]
	delete(c.catching, conv)
	if len(c.catching) == 0 {
		c.catching = nil
	}
	return cu
}

// admitLocked reports whether a record of conv's channel is to be pushed
// to this connection now; while the connection catches up on conv, the
// record waits its turn instead. c.mu is held.
func (c *liveConn) admitLocked(conv string, sq *schemas.Sequenced, frame []byte, large bool) bool {
	joined, ok := c.groups[conv]
	if !ok {
		return false
	}
	if cu := c.catching[conv]; cu != nil {
		cu.hold(heldPush{sq: sq, frame: frame, large: large}, c.hub.heldLimit())
		return false
	}
	return sq.GetSeq() > joined
}
