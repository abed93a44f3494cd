package live

import (
	"context"
	"sync"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
)

// markFlusher raises a batcher's receipt marks on the hub's tick, one
// flush at a time: the pushed and the delivered batchers gather their
// marks each their own way and flush them alike, so that one place says
// how a raise runs beside the hub's loop and what a raise that went up
// becomes (a receipt event for the senders).
type markFlusher struct {
	h    *liveHub
	kind byte   // redisstore.ReceiptPushed or ReceiptDelivered
	what string // the receipts raised, for the log
	flushGate
	// takeLocked takes the batch gathered (mu held): the marks and, per
	// mark, its senders' newest seqs (nil: none).
	takeLocked func() ([]redisstore.ReceiptMark, []map[string]uint64)
}

// flushDue raises what is queued in a goroutine of its own (one at a
// time), so the hub's loop never waits on Redis for it.
func (f *markFlusher) flushDue(ctx context.Context) {
	f.mu.Lock()
	if f.flushing {
		f.mu.Unlock()
		return
	}
	marks, senders := f.takeLocked()
	if len(marks) == 0 {
		f.mu.Unlock()
		return
	}
	f.goFlushUnlock(func() { f.raise(ctx, marks, senders) })
}

// flushNow raises what is queued and waits (the hub closing).
func (f *markFlusher) flushNow() {
	f.mu.Lock()
	marks, senders := f.takeLocked()
	f.mu.Unlock()
	if len(marks) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.h.store.Config().CallTimeout)
	defer cancel()
	f.raise(ctx, marks, senders)
}

func (f *markFlusher) raise(ctx context.Context, marks []redisstore.ReceiptMark, senders []map[string]uint64) {
	ctx, cancel := context.WithTimeout(ctx, f.h.store.Config().CallTimeout)
	defer cancel()
	start := time.Now()
	raised, err := f.h.store.RaiseReceipts(ctx, f.kind, marks)
	if err != nil {
		// Cursors only rise: the next pushes and acks raise them past these.
		f.h.log.Warn("raise "+f.what+" receipts", "marks", len(marks), "err", err, "took", time.Since(start))
		return
	}
	for i, r := range raised {
		if r.Raised && i < len(senders) {
			f.h.receipts.add(r.Conv, r.Epoch, marks[i].Member, r.Prev, r.Seq, senders[i])
		}
	}
}

// flushGate lets one flush of a batcher run at a time beside the hub's
// loop. mu guards flushing (a flush is running; the next tick's waits for
// it) and the batch of the batcher that embeds the gate: a flush takes its
// batch under mu and calls the store with it released; no other lock is
// taken while it is held.
type flushGate struct {
	mu       sync.Mutex
	flushing bool
}

// goFlushUnlock, called with mu held and no flush running, marks one
// running, releases mu and runs flush in a goroutine of its own, so that
// the hub's loop never waits on Redis for it.
func (g *flushGate) goFlushUnlock(flush func()) {
	g.flushing = true
	g.mu.Unlock()
	go func() {
		defer func() {
			g.mu.Lock()
			g.flushing = false
			g.mu.Unlock()
		}()
		flush()
	}()
}
