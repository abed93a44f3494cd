package live

import (
	"context"
	"errors"
	"time"

	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
)

// receiptCoalescer gathers the cursor changes of each conversation for
// ReceiptDelay, then tells each sender whose messages they cover once:
// 150 members acking one message within the delay cost one count and one
// event per sender, not 150.
type receiptCoalescer struct {
	h *liveHub

	flushGate // its mu guards convs
	convs     map[string]*receiptRange
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
	rc.goFlushUnlock(func() {
		if err := rc.send(ctx, ready); err != nil {
			rc.h.log.Warn("send receipts", "conversations", len(ready), "err", err)
		}
	})
}

// send tells the senders of the messages in each range their counts:
// one pipeline of counts, one of peer cursors, one presence read and one
// publish per node for all the conversations that were due.
func (rc *receiptCoalescer) send(ctx context.Context, ready map[string]*receiptRange) error {
	st := rc.h.store
	var qs []redisstore.ReceiptQuery
	for conv, r := range ready {
		newest := r.senders
		if r.scan {
			lo := max(r.lo, r.hi-min(r.hi, maxReceiptScan))
			page, err := rc.h.reads.ReadPage(ctx, r.member, conv, readpath.PageQuery{After: lo, HasAfter: true, Before: r.hi + 1,
				Limit: maxReceiptScan, Epoch: r.epoch})
			if err != nil {
				rc.h.log.Warn("read whose messages receipts cover", "conv", conv, "err", err)
				continue
			}
			for _, m := range page.Messages {
				if snd := m.GetMessage().GetSender(); snd != "" && snd != r.member {
					newest[snd] = max(newest[snd], m.GetSeq())
				}
			}
		}
		for snd, seq := range newest {
			qs = append(qs, redisstore.ReceiptQuery{Conv: conv, Seq: seq, Sender: snd})
		}
	}
	counts, err := st.CountReceiptsMany(ctx, qs)
	if err != nil {
		return err
	}
	peers := map[string]string{}
	for i, q := range qs {
		if counts[i].Others == 1 { // a direct conversation, or a group of two: the peer's cursors
			peers[q.Conv] = ready[q.Conv].member
		}
	}
	cur, err := st.ReceiptsOf(ctx, peers)
	if err != nil {
		return err
	}
	var out []told
	for i, q := range qs {
		r, n := ready[q.Conv], counts[i]
		if n.Epoch != r.epoch {
			continue
		}
		rcpt := Receipt{Conv: q.Conv, Epoch: r.epoch, Seq: q.Seq, State: edge.StateOf(n), Pushed: n.Pushed,
			Delivered: n.Delivered, Read: n.Read, Members: n.Others}
		if _, ok := peers[q.Conv]; ok {
			rcpt.PeerDeliveredSeq, rcpt.PeerReadSeq = cur[q.Conv].Delivered, cur[q.Conv].Read
		}
		out = append(out, told{user: q.Sender, env: Envelope{Kind: KindReceipt, Conv: q.Conv, Receipt: &rcpt}})
	}
	return rc.h.tell(ctx, out)
}

// told is an envelope for every online device of a user.
type told struct {
	user string
	env  Envelope
}

// tell sends each envelope to every online device of its user.
func (h *liveHub) tell(ctx context.Context, list []told) error {
	if len(list) == 0 {
		return nil
	}
	var users []string
	seen := map[string]bool{}
	for _, t := range list {
		if !seen[t.user] {
			seen[t.user] = true
			users = append(users, t.user)
		}
	}
	pres, err := h.store.PresenceOf(ctx, users)
	// A user whose presence can never be read is told nothing, the others
	// are told all the same.
	if err != nil && !errors.As(err, new(redisstore.ItemErrors)) {
		return err
	}
	now := time.Now()
	batches := map[string]*Batch{}
	for _, t := range list {
		for _, p := range pres[t.user] {
			if !p.Online(now) {
				continue
			}
			ch := h.store.Keys().NodeChannel(p.Node)
			if batches[ch] == nil {
				batches[ch] = &Batch{}
			}
			e := t.env
			e.Targets = []Target{{User: t.user, Device: p.Device, Conn: p.Conn}}
			batches[ch].Envelopes = append(batches[ch].Envelopes, e)
		}
	}
	return h.bus.PublishBatches(ctx, batches)
}

// connOf is this node's connection of a device, if any.
func (h *liveHub) connOf(user, device string) *liveConn {
	return h.index.device(user, device)
}
