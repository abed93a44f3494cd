package live

import (
	"context"
	"sync"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
)

// raiseBatcher gathers the delivered marks of acks on this node's sockets
// and raises them together on the hub's tick: every member that acked a
// conversation in one raise of it, the conversations that share a hash
// slot (all of them on a standalone server) in one script call, not a
// call per ack.
// The acks' marks come here once the devices' own cursors were written
// (ackflush.go), so a sender is told "delivered" only of a durable ack;
// the members' delivered cursors wait at most a tick more. A node that
// stops before its batch is sent loses those raises until the members'
// next acks, which raise the cursors past them.
type raiseBatcher struct {
	h *liveHub

	// mu guards marks and senders and flushing (a flush is running; the next tick's
	// waits for it). A flush takes its batch under mu and calls the store
	// with it released; no other lock is taken while it is held.
	mu       sync.Mutex
	marks    []redisstore.ReceiptMark
	senders  []map[string]uint64 // per mark: the senders its ack covered on this node
	flushing bool
}

// maxDeferredMarks bounds the marks waiting; an ack that does not fit
// raises its own at once.
const maxDeferredMarks = 20_000

func (rb *raiseBatcher) room(n int) bool {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return len(rb.marks)+n <= maxDeferredMarks
}

// addEach queues marks, each with its senders (conv's sender → newest
// seq; may be nil).
func (rb *raiseBatcher) addEach(marks []redisstore.ReceiptMark, senders []map[string]uint64) {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	rb.marks = append(rb.marks, marks...)
	rb.senders = append(rb.senders, senders...)
}

func (rb *raiseBatcher) take() ([]redisstore.ReceiptMark, []map[string]uint64) {
	marks, senders := rb.marks, rb.senders
	rb.marks, rb.senders = nil, nil
	return marks, senders
}

// flushDue raises what is queued in a goroutine of its own (one at a
// time), so the hub's loop never waits on Redis for it.
func (rb *raiseBatcher) flushDue(ctx context.Context) {
	rb.mu.Lock()
	if rb.flushing || len(rb.marks) == 0 {
		rb.mu.Unlock()
		return
	}
	rb.flushing = true
	marks, senders := rb.take()
	rb.mu.Unlock()
	go func() {
		defer func() {
			rb.mu.Lock()
			rb.flushing = false
			rb.mu.Unlock()
		}()
		rb.raise(ctx, marks, senders)
	}()
}

// flushNow raises what is queued and waits (the hub closing).
func (rb *raiseBatcher) flushNow() {
	rb.mu.Lock()
	marks, senders := rb.take()
	rb.mu.Unlock()
	if len(marks) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), rb.h.store.Config().CallTimeout)
	defer cancel()
	rb.raise(ctx, marks, senders)
}

func (rb *raiseBatcher) raise(ctx context.Context, marks []redisstore.ReceiptMark, senders []map[string]uint64) {
	ctx, cancel := context.WithTimeout(ctx, rb.h.store.Config().CallTimeout)
	defer cancel()
	start := time.Now()
	raised, err := rb.h.store.RaiseReceipts(ctx, redisstore.ReceiptDelivered, marks)
	if err != nil {
		// Cursors only rise: the members' next acks raise them past these.
		rb.h.log.Warn("raise delivered receipts", "marks", len(marks), "err", err, "took", time.Since(start))
		return
	}
	for i, r := range raised {
		if r.Raised && i < len(senders) {
			rb.h.receipts.add(r.Conv, r.Epoch, marks[i].Member, r.Prev, r.Seq, senders[i])
		}
	}
}
