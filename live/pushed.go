package live

import (
	"context"
	"sync"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
)

// pushedBatcher gathers, per conversation and recipient, the newest seq
// this node handed to a live connection of theirs (queued for its
// socket's writer, not yet acked) and raises those pushed cursors on the
// hub's tick: one pipelined call for all of them (a script call per
// conversations sharing a hash slot), never a call per frame. A raise
// that went up is a receipt event for the senders, as for delivered.
// Large groups keep no cursors, so their pushes are not gathered. A node
// that stops before its batch is sent loses those raises: a sender then
// sees stored until the recipient's ack shows delivered.
type pushedBatcher struct {
	h *liveHub

	// mu guards marks and flushing (a flush is running; the next tick's
	// waits for it). A flush takes its batch under mu and calls the store
	// with it released; no other lock is taken while it is held.
	mu       sync.Mutex
	marks    map[pushedKey]*pushedMark
	flushing bool
}

type pushedKey struct {
	conv   string
	epoch  uint64
	member string
}

type pushedMark struct {
	seq     uint64
	senders map[string]uint64 // sender → their newest seq pushed
}

func newPushedBatcher(h *liveHub) *pushedBatcher {
	return &pushedBatcher{h: h, marks: map[pushedKey]*pushedMark{}}
}

// add notes that seq of sender was pushed to member; over the bound
// (maxDeferredMarks recipients and conversations waiting) it is dropped.
func (pb *pushedBatcher) add(conv string, epoch uint64, member, sender string, seq uint64) {
	if sender == member {
		return // nobody is shown their own message as pushed
	}
	k := pushedKey{conv, epoch, member}
	pb.mu.Lock()
	defer pb.mu.Unlock()
	m := pb.marks[k]
	if m == nil {
		if len(pb.marks) >= maxDeferredMarks {
			return
		}
		m = &pushedMark{senders: map[string]uint64{}}
		pb.marks[k] = m
	}
	m.seq = max(m.seq, seq)
	m.senders[sender] = max(m.senders[sender], seq)
}

func (pb *pushedBatcher) takeLocked() ([]redisstore.ReceiptMark, []map[string]uint64) {
	if len(pb.marks) == 0 {
		return nil, nil
	}
	marks := make([]redisstore.ReceiptMark, 0, len(pb.marks))
	senders := make([]map[string]uint64, 0, len(pb.marks))
	for k, m := range pb.marks {
		marks = append(marks, redisstore.ReceiptMark{Conv: k.conv, Epoch: k.epoch, Member: k.member, Seq: m.seq})
		senders = append(senders, m.senders)
	}
	pb.marks = map[pushedKey]*pushedMark{}
	return marks, senders
}

// flushDue raises what is queued in a goroutine of its own (one at a
// time), so the hub's loop never waits on Redis for it.
func (pb *pushedBatcher) flushDue(ctx context.Context) {
	pb.mu.Lock()
	if pb.flushing || len(pb.marks) == 0 {
		pb.mu.Unlock()
		return
	}
	pb.flushing = true
	marks, senders := pb.takeLocked()
	pb.mu.Unlock()
	go func() {
		defer func() {
			pb.mu.Lock()
			pb.flushing = false
			pb.mu.Unlock()
		}()
		pb.raise(ctx, marks, senders)
	}()
}

// flushNow raises what is queued and waits (the hub closing).
func (pb *pushedBatcher) flushNow() {
	pb.mu.Lock()
	marks, senders := pb.takeLocked()
	pb.mu.Unlock()
	if len(marks) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), pb.h.store.Config().CallTimeout)
	defer cancel()
	pb.raise(ctx, marks, senders)
}

func (pb *pushedBatcher) raise(ctx context.Context, marks []redisstore.ReceiptMark, senders []map[string]uint64) {
	ctx, cancel := context.WithTimeout(ctx, pb.h.store.Config().CallTimeout)
	defer cancel()
	start := time.Now()
	raised, err := pb.h.store.RaiseReceipts(ctx, redisstore.ReceiptPushed, marks)
	if err != nil {
		// Cursors only rise: the next pushes raise them past these.
		pb.h.log.Warn("raise pushed receipts", "marks", len(marks), "err", err, "took", time.Since(start))
		return
	}
	for i, r := range raised {
		if r.Raised {
			pb.h.receipts.add(r.Conv, r.Epoch, marks[i].Member, r.Prev, r.Seq, senders[i])
		}
	}
}
