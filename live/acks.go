package live

import (
	"context"
	"sync"
	"time"

	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/wire"
)

// The bounds of the acks waiting for a flush: past either, an ack flushes
// early and goes the synchronous way (POST /v1/ack's) meanwhile.
const (
	maxPendingAckDevices = 10_000
	maxPendingAckItems   = 100_000
)

// maxOwedAnswers bounds the devices whose flush found something to tell
// (a resync, evicted devices) after their connection had gone: the next
// ack answer of the device on this node carries it.
const maxOwedAnswers = 10_000

// ackFlusher holds the acks of this node's sockets until the next flush
// (Config.AckFlush, 1 s at most): a device's acks within it are coalesced
// (per conversation, the newest epoch's highest seq) and every device
// that acked is written in one pipelined call per store, then the
// members' delivered cursors are raised with the next batch of raises,
// so a sender is told "delivered" only once the ack is in Redis. The ack
// frame is answered before the write, with what the node knows; what only
// the write learns (resync, evicted devices) is sent in an acked frame
// after it. A crash loses the acks of at most one flush interval: their
// messages are pushed again, and the devices drop them as duplicates.
type ackFlusher struct {
	h        *liveHub
	interval time.Duration

	// mu guards pending, items, owed and closed. Taken alone: no other
	// lock of the live channel is taken while it is held, and no store
	// call is made under it.
	mu      sync.Mutex
	pending map[ackKey]*pendingAcks
	items   int // conversations held in pending, with their marks
	owed    map[ackKey]redisstore.AckResult
	closed  bool // the hub closed: acks go the synchronous way

	// flushing serializes flushes (the loop's and the close's one), so
	// that an ack's write and its raises keep their order. It is held
	// across a flush, which takes mu, the raises' lock and connections'
	// locks inside it; it is never taken with another lock held.
	flushing sync.Mutex
	early    chan struct{} // one waiting signal: pending is full, flush now
	stopped  chan struct{} // closed when the loop returned
}

type ackKey struct{ user, dev string }

// pendingAcks are one device's acks since the last flush.
type pendingAcks struct {
	conn    *liveConn // nil without a connection here
	items   map[string]redisstore.AckItem
	marks   map[string]redisstore.ReceiptMark
	senders map[string]map[string]uint64 // conv → sender → newest seq
	nowMS   int64
	retried bool
}

func newAckFlusher(h *liveHub) *ackFlusher {
	return &ackFlusher{h: h, interval: h.cfg.AckFlush, pending: map[ackKey]*pendingAcks{},
		owed: map[ackKey]redisstore.AckResult{}, early: make(chan struct{}, 1), stopped: make(chan struct{})}
}

// applyAcks records the acks of an ack frame: checked (access, when not
// nil, is what the connection knows of the conversations from its
// pushes; otherwise they are read and checked), then held for the next
// flush and answered at once. When the pending set or the raises' batch
// is full, or the hub is closing, the acks go the way of POST /v1/ack's,
// raises included, and the answer waits for them.
func (h *liveHub) applyAcks(ctx context.Context, c *liveConn, items []edge.SeqItem, access map[string]redisstore.ConvAccess) (wire.AckResponse, error) {
	if access == nil {
		var err error
		if access, err = h.acker.Check(ctx, c.user, items); err != nil {
			return wire.AckResponse{}, err
		}
	}
	acks := edge.AckItems(items, access)
	marks := edge.ReceiptMarks(c.user, acks, access)
	if h.acks.room(len(acks)) && h.raises.room(len(marks)) {
		senders := h.ackedOnConn(c.user, c.device, acks)
		if owed, ok := h.acks.add(c, acks, marks, senders, h.clock().UnixMilli()); ok {
			return edge.AckAnswer(c.device, len(acks), owed), nil
		}
	}
	h.metrics.ackFlush.sync.Inc()
	return h.acker.Apply(ctx, c.user, c.device, items, access)
}

// room reports whether n more acks fit; when they do not, the loop is
// told to flush now.
func (f *ackFlusher) room(n int) bool {
	f.mu.Lock()
	ok := !f.closed && len(f.pending) < maxPendingAckDevices && f.items+n <= maxPendingAckItems
	f.mu.Unlock()
	if !ok {
		f.flushSoon()
	}
	return ok
}

func (f *ackFlusher) flushSoon() {
	select {
	case f.early <- struct{}{}:
	default:
	}
}

// add holds a device's acks for the flush, coalesced with those it holds
// already, and returns what an earlier flush owes the device's answer;
// false when the hub closed meanwhile. The bounds were checked by room:
// acks read concurrently may pass them by one frame each.
func (f *ackFlusher) add(c *liveConn, acks []redisstore.AckItem, marks []redisstore.ReceiptMark, senders map[string]map[string]uint64, nowMS int64) (redisstore.AckResult, bool) {
	k := ackKey{c.user, c.device}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return redisstore.AckResult{}, false
	}
	p := f.pending[k]
	if p == nil {
		p = &pendingAcks{items: make(map[string]redisstore.AckItem, len(acks)), marks: map[string]redisstore.ReceiptMark{}}
		f.pending[k] = p
	}
	p.conn, p.nowMS = c, nowMS
	f.items += p.merge(acks, marks, senders)
	if len(f.pending) >= maxPendingAckDevices || f.items >= maxPendingAckItems {
		f.flushSoon()
	}
	owed := f.owed[k]
	delete(f.owed, k)
	return owed, true
}

// merge coalesces acks into p (per conversation the newest epoch, then
// the highest seq: what ack_cursor.lua would keep of them) and returns
// how many conversations p holds more.
func (p *pendingAcks) merge(acks []redisstore.AckItem, marks []redisstore.ReceiptMark, senders map[string]map[string]uint64) int {
	added := 0
	for _, a := range acks {
		old, ok := p.items[a.Conv]
		if !ok {
			added++
		}
		if !ok || laterCursor(a.Epoch, a.Seq, old.Epoch, old.Seq) {
			p.items[a.Conv] = a
		}
	}
	for _, m := range marks {
		if old, ok := p.marks[m.Conv]; !ok || laterCursor(m.Epoch, m.Seq, old.Epoch, old.Seq) {
			p.marks[m.Conv] = m
		}
	}
	for conv, by := range senders {
		if p.senders == nil {
			p.senders = map[string]map[string]uint64{}
		}
		held := p.senders[conv]
		if held == nil {
			held = make(map[string]uint64, len(by))
			p.senders[conv] = held
		}
		for sender, seq := range by {
			held[sender] = max(held[sender], seq)
		}
	}
	return added
}

// laterCursor: (epoch, seq) is past (oldEpoch, oldSeq) as the cursor
// scripts order them (a newer epoch replaces, an older is ignored).
func laterCursor(epoch, seq, oldEpoch, oldSeq uint64) bool {
	return epoch > oldEpoch || (epoch == oldEpoch && seq > oldSeq)
}

// acked tells this node's connection of the device, if it has one, to
// stop pushing what was acked, and hands the raised cursors to the
// receipt events (with the senders the connection knows from its pushes).
func (h *liveHub) acked(user, dev string, acks []redisstore.AckItem, raised []redisstore.RaisedReceipt) {
	senders := h.ackedOnConn(user, dev, acks)
	for _, r := range raised {
		if r.Raised {
			h.receipts.add(r.Conv, r.Epoch, user, r.Prev, r.Seq, senders[r.Conv])
		}
	}
}

// readRaised hands the read cursors a user's read raised to the receipt
// events.
func (h *liveHub) readRaised(user string, raised []redisstore.RaisedReceipt) {
	for _, r := range raised {
		if r.Raised {
			h.receipts.add(r.Conv, r.Epoch, user, r.Prev, r.Seq, nil)
		}
	}
}

// ackedOnConn tells this node's connection of the device, if it has one,
// to stop pushing what was acked, and returns the senders of those pushes
// (conv → sender → their newest seq; nil without a connection here).
func (h *liveHub) ackedOnConn(user, dev string, acks []redisstore.AckItem) map[string]map[string]uint64 {
	c := h.connOf(user, dev)
	if c == nil {
		return nil
	}
	return c.acknowledgedAll(acks)
}
