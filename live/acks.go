package live

import (
	"context"
	"sync"
	"time"

	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/wire"
)

// ackWindow is how long the first ack of a batch waits for others: acks
// on this node's sockets within it are written in one pipeline (one round
// trip and one write and read for Redis instead of one per ack). Devices
// ack about once a second each, at moments of their own, so a node of a
// thousand devices gathers ten in 10 ms and three in 3 ms; nothing waits
// on the answer but the device's next frame.
const ackWindow = 10 * time.Millisecond

// maxAckBatch ends the wait early; each connection has at most one ack in
// flight (its frames are read in turn), so a batch is bounded anyway.
const maxAckBatch = 128

// ackBatcher writes acks of many devices together. The first ack of a
// batch leads: it waits ackWindow (or until the batch is full), then runs
// the batch and hands every ack its answer.
type ackBatcher struct {
	store *redisstore.Store

	// mu guards pending and full; the batch's leader takes it under mu
	// and runs it with mu released. No other lock is taken while it is
	// held.
	mu      sync.Mutex
	pending []*pendingAck
	full    chan struct{} // closed when pending reaches maxAckBatch
}

type pendingAck struct {
	ack  redisstore.DeviceAck
	res  redisstore.AckResult
	err  error
	done chan struct{}
}

func (b *ackBatcher) ack(ctx context.Context, a redisstore.DeviceAck) (redisstore.AckResult, error) {
	req := &pendingAck{ack: a, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, req)
	lead := len(b.pending) == 1
	if lead {
		b.full = make(chan struct{})
	}
	full := b.full
	if len(b.pending) == maxAckBatch {
		close(full)
	}
	b.mu.Unlock()
	if lead {
		t := time.NewTimer(ackWindow)
		select {
		case <-t.C:
		case <-full:
			t.Stop()
		}
		b.mu.Lock()
		batch := b.pending
		b.pending = nil
		b.mu.Unlock()
		b.run(batch)
	}
	select {
	case <-req.done:
		return req.res, req.err
	case <-ctx.Done():
		return redisstore.AckResult{}, ctx.Err()
	}
}

// run writes a batch; it does not depend on any one caller's context.
func (b *ackBatcher) run(batch []*pendingAck) {
	acks := make([]redisstore.DeviceAck, len(batch))
	for i, r := range batch {
		acks[i] = r.ack
	}
	res, errs := b.store.AckDevices(context.Background(), acks)
	for i, r := range batch {
		r.res, r.err = res[i], errs[i]
		close(r.done)
	}
}

// applyAcks records the acks of an ack frame: the device's cursors now
// (the node's acks within ackWindow in one pipeline, when every user's
// keys are on the main store), the members' delivered cursors with the
// node's next batch of raises. access, when not nil, is what the
// connection knows of the conversations from its pushes; otherwise they
// are read and checked. With the raises' batch full, the acks go the way
// of POST /v1/ack's, raises included.
func (h *liveHub) applyAcks(ctx context.Context, user, dev string, items []edge.SeqItem, access map[string]redisstore.ConvAccess) (wire.AckResponse, error) {
	if access == nil {
		var err error
		if access, err = h.acker.Check(ctx, user, items); err != nil {
			return wire.AckResponse{}, err
		}
	}
	acks := edge.AckItems(items, access)
	marks := edge.ReceiptMarks(user, acks, access)
	if !h.raises.room(len(marks)) {
		return h.acker.Apply(ctx, user, dev, items, access)
	}
	var res redisstore.AckResult
	var err error
	if !h.router.HasHot() {
		res, err = h.acks.ack(ctx, redisstore.DeviceAck{User: user, Device: dev, Items: acks, NowMS: h.clock().UnixMilli()})
	} else {
		res, err = h.acker.DeviceAck(ctx, user, dev, acks)
	}
	if err != nil {
		return wire.AckResponse{}, err
	}
	h.raises.add(marks, h.ackedOnConn(user, dev, acks))
	return edge.AckAnswer(dev, len(acks), res), nil
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
