package api

import (
	"context"
	"sync"
	"time"

	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/redisstore"
)

// receiptCoalescer gathers the cursor changes of each conversation for
// ReceiptDelay, then tells each sender whose messages they cover once:
// 150 members acking one message within the delay cost one count and one
// event per sender, not 150.
type receiptCoalescer struct {
	h *liveHub

	mu       sync.Mutex
	convs    map[string]*receiptRange
	flushing bool
}

// maxCoalesced bounds the conversations waiting; more are sent at once.
const maxCoalesced = 10_000

// maxReceiptScan bounds the messages read to find whose a change covers.
const maxReceiptScan = 64

type receiptRange struct {
	epoch  uint64
	member string // any member whose cursor rose (reads the range as them)
	lo, hi uint64 // cursors rose from lo to hi
	due    time.Time
	// senders known from this node's pushes (sender → newest seq); scan:
	// some raise came without them, so the range is read for its senders.
	senders map[string]uint64
	scan    bool
}

func newReceiptCoalescer(h *liveHub) *receiptCoalescer {
	return &receiptCoalescer{h: h, convs: map[string]*receiptRange{}}
}

func (rc *receiptCoalescer) add(conv string, epoch uint64, member string, prev, seq uint64, senders map[string]uint64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	r := rc.convs[conv]
	if r == nil || r.epoch != epoch {
		if len(rc.convs) >= maxCoalesced {
			return // over the bound: the receipts answer still has it
		}
		r = &receiptRange{epoch: epoch, member: member, lo: prev, hi: seq, due: time.Now().Add(rc.h.cfg.ReceiptDelay),
			senders: map[string]uint64{}}
		rc.convs[conv] = r
	}
	r.lo, r.hi = min(r.lo, prev), max(r.hi, seq)
	if len(senders) == 0 {
		r.scan = true
	}
	for snd, s := range senders {
		if snd != member { // nobody is told of their own ack
			r.senders[snd] = max(r.senders[snd], s)
		}
	}
}

// flushDue sends what waited long enough, in a goroutine of its own (one
// at a time) so the hub's loop never waits on Redis for it.
func (rc *receiptCoalescer) flushDue(ctx context.Context, now time.Time) {
	rc.mu.Lock()
	if rc.flushing {
		rc.mu.Unlock()
		return
	}
	ready := map[string]*receiptRange{}
	for conv, r := range rc.convs {
		if !now.Before(r.due) {
			ready[conv] = r
			delete(rc.convs, conv)
		}
	}
	if len(ready) == 0 {
		rc.mu.Unlock()
		return
	}
	rc.flushing = true
	rc.mu.Unlock()
	go func() {
		defer func() {
			rc.mu.Lock()
			rc.flushing = false
			rc.mu.Unlock()
		}()
		for conv, r := range ready {
			if err := rc.send(ctx, conv, r); err != nil {
				rc.h.log.Warn("send receipts", "conv", conv, "err", err)
			}
		}
	}()
}

// send tells the senders of the messages in (lo, hi] their counts.
func (rc *receiptCoalescer) send(ctx context.Context, conv string, r *receiptRange) error {
	st := rc.h.store
	newest := r.senders
	if r.scan {
		lo := max(r.lo, r.hi-min(r.hi, maxReceiptScan))
		page, err := st.ReadPage(ctx, r.member, conv, redisstore.PageQuery{After: lo, HasAfter: true, Before: r.hi + 1,
			Limit: maxReceiptScan, Epoch: r.epoch})
		if err != nil {
			return err
		}
		for _, m := range page.Messages {
			if snd := m.GetMessage().GetSender(); snd != "" {
				newest[snd] = max(newest[snd], m.GetSeq())
			}
		}
	}
	users := make([]string, 0, len(newest))
	envs := map[string]live.Receipt{}
	for snd, seq := range newest {
		n, err := st.CountReceipts(ctx, conv, seq, snd)
		if err != nil {
			return err
		}
		if n.Epoch != r.epoch {
			continue
		}
		rcpt := live.Receipt{Conv: conv, Epoch: r.epoch, Seq: seq, Delivered: n.Delivered, Read: n.Read, Members: n.Others}
		if n.Others == 1 { // a direct conversation, or a group of two: the peer's cursors
			cur, err := st.ReceiptsOf(ctx, map[string]string{conv: r.member})
			if err == nil && r.member != snd {
				rcpt.PeerDeliveredSeq, rcpt.PeerReadSeq = cur[conv].Delivered, cur[conv].Read
			}
		}
		envs[snd] = rcpt
		users = append(users, snd)
	}
	return rc.h.tell(ctx, users, func(user string) live.Envelope {
		rcpt := envs[user]
		return live.Envelope{Kind: live.KindReceipt, Conv: conv, Receipt: &rcpt}
	})
}

// tell sends each user's envelope to every online device of theirs.
func (h *liveHub) tell(ctx context.Context, users []string, env func(user string) live.Envelope) error {
	if len(users) == 0 {
		return nil
	}
	pres, err := h.store.PresenceOf(ctx, users)
	if err != nil {
		return err
	}
	now := time.Now()
	batches := map[string]*live.Batch{}
	for _, u := range users {
		for _, p := range pres[u] {
			if !p.Online(now) {
				continue
			}
			ch := h.store.Keys().NodeChannel(p.Node)
			if batches[ch] == nil {
				batches[ch] = &live.Batch{}
			}
			e := env(u)
			e.Targets = []live.Target{{User: u, Device: p.Device, Conn: p.Conn}}
			batches[ch].Envelopes = append(batches[ch].Envelopes, e)
		}
	}
	out := make(map[string][]byte, len(batches))
	for ch, b := range batches {
		data, err := live.Encode(*b)
		if err != nil {
			return err
		}
		out[ch] = data
	}
	return h.bus.PublishMany(ctx, out)
}

// connOf is this node's connection of a device, if any.
func (h *liveHub) connOf(user, device string) *liveConn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.devices[devKey{user, device}]
}
