package api

import (
	"context"
	"sync"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
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
