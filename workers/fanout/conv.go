package fanout

import (
	"context"
	"errors"
	"sync"

	"github.com/alitto/pond/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
)

// convResult is what one conversation's records of a batch produced.
type convResult struct {
	sequenced []*schemas.Sequenced
	sources   []*kgo.Record // the record each sequenced one came from
	dead      []stream.DeadLetter
	hot       []string // users found hot, to move after the batch
	// failures counts, by the call that failed for good (dead*), what
	// dead is made of: the batch's metrics take them once its letters
	// are out (a batch retried counts once); a restore's, which produces
	// none, count apart.
	failures map[string]int
	// restoring: the records are a restore's, re-applied from
	// im.sequenced. Its letters are never produced; what fails for good is
	// logged as not re-applied (logFailedForGood), not as dead-lettered.
	restoring bool
}

// The calls whose failures for good dead-letter records.
const (
	deadSequence  = "sequence"
	deadMembers   = "members"
	deadMarkLarge = "mark_large"
	deadDataKey   = "data_key"
	deadInbox     = "inbox" // counted by failed update, not by record
)

func (r *convResult) charge(call string, n int) {
	if r.failures == nil {
		r.failures = map[string]int{}
	}
	r.failures[call] += n
}

// handleConv works through one conversation's records in order, one merge
// batch at a time: sequence the batch, then update its recipients' inboxes
// with at most TasksPerConversation chunk tasks at once. The next batch is
// sequenced only after the previous one reached every inbox, so a leave is
// never applied before the messages in front of it were delivered.
func (f *Fanout) handleConv(ctx context.Context, conv string, recs []pending, now int64) (convResult, error) {
	var res convResult
	sub := f.chunks.NewSubpool(f.cfg.TasksPerConversation)
	defer sub.StopAndWait()
	seen := map[uint64]bool{}
	for _, batch := range mergeBatches(recs, f.cfg.MergeSize) {
		_, err := f.handleMerge(ctx, sub, conv, batch, now, seen, &res)
		var ns notSequenced
		if errors.As(err, &ns) {
			res.dead = append(res.dead, f.unsequencedLetters(&res, conv, batch, ns.err)...)
			continue
		}
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// notSequenced is handleMerge's error when the sequencing call refused
// its batch for good (redisstore.Permanent, the error it wraps): the
// script checks every key before its first write, so nothing of the batch
// got a seq or changed anything. What becomes of the records is the
// caller's: a batch dead-letters them, a restore gives the conversation up.
type notSequenced struct{ err error }

func (e notSequenced) Error() string { return "not sequenced: " + e.err.Error() }
func (e notSequenced) Unwrap() error { return e.err }

// mergeBatches cuts a conversation's records into batches of at most size.
// A leave starts a batch of its own: the sequencing script applies it at
// once, and members it removes must first receive what came before.
func mergeBatches(recs []pending, size int) [][]pending {
	var out [][]pending
	start := 0
	for i := range recs {
		leave := recs[i].msg.GetKind() == schemas.Kind_KIND_MEMBER_LEAVE
		if i > start && (i-start == size || leave) {
			out = append(out, recs[start:i])
			start = i
		}
	}
	if start < len(recs) {
		out = append(out, recs[start:])
	}
	return out
}

// handleMerge sequences one merge batch and delivers it to every inbox; it
// returns the sequencing result, or notSequenced when the sequencing call
// can never succeed.
func (f *Fanout) handleMerge(ctx context.Context, sub pond.Pool, conv string, batch []pending, now int64,
	seen map[uint64]bool, res *convResult) (*redisstore.SequenceResult, error) {
	msgs := make([]*schemas.Message, len(batch))
	for i, p := range batch {
		msgs[i] = p.msg
	}
	sr, err := f.store.Sequence(ctx, conv, msgs, redisstore.ProbeUsers(msgs), now)
	if redisstore.Permanent(err) {
		return nil, notSequenced{err: err}
	}
	if err != nil {
		return nil, err
	}
	f.metrics.merge.WithLabelValues("sequence").Observe(float64(len(msgs)))
	for i, it := range sr.Items {
		switch it.Status {
		case redisstore.SeqRejected, redisstore.SeqRaced, redisstore.SeqFailed:
			// A race past the store's bounds, or a call that failed for
			// good after earlier records got their seqs, is not a store
			// that is down: it would be retried without end, so it goes
			// with its reason.
			if it.Status == redisstore.SeqFailed {
				res.charge(deadSequence, 1)
			}
			res.dead = append(res.dead, stream.DeadLetter{Record: batch[i].rec, Headers: itemHeaders(it), Reason: it.Reason.Error()})
			continue
		case redisstore.SeqNew:
			f.metrics.sequenced.Inc()
		case redisstore.SeqDuplicate:
			f.metrics.duplicates.Inc()
		}
		// A replayed record is produced again: the crash may have come
		// before its first produce. Readers collapse by (conv, seq).
		if sq := it.Sequenced; sq != nil && !seen[sq.GetSeq()] {
			seen[sq.GetSeq()] = true
			res.sequenced = append(res.sequenced, sq)
			res.sources = append(res.sources, batch[i].rec)
		}
	}
	var all map[string]uint64
	if sr.LargeFrom > 0 && !sr.LargeConverted {
		all, err = f.store.Members(ctx, conv)
		if redisstore.Permanent(err) {
			res.dead = append(res.dead, f.undeliveredLetters(res, conv, sr, batch, err)...)
			return sr, nil
		}
		if err != nil {
			return nil, err
		}
	}
	hot, failed, err := f.deliver(ctx, sub, redisstore.PlanInbox(conv, sr, all))
	res.hot = append(res.hot, hot...)
	if err != nil {
		return nil, err
	}
	res.dead = append(res.dead, f.inboxLetters(res, conv, sr, batch, failed)...)
	if all != nil {
		// Only now: a replay before this point converts again.
		err := f.store.MarkLargeConverted(ctx, conv)
		if redisstore.Permanent(err) {
			res.dead = append(res.dead, f.unmarkedLetter(res, conv, sr, batch, err))
			return sr, nil
		}
		return sr, err
	}
	return sr, nil
}

// deliver applies the updates in chunks of RecipientChunk users, each
// chunk one pipelined round trip, on the conversation's sub-pool. It
// returns the users that just became hot and the updates that can never
// succeed; an error is a store to wait for.
func (f *Fanout) deliver(ctx context.Context, sub pond.Pool, updates []redisstore.InboxUpdate) ([]string, []failedUpdate, error) {
	merged := f.metrics.merge.WithLabelValues("inbox")
	for _, u := range updates {
		merged.Observe(float64(len(u.Events)))
	}
	var mu sync.Mutex
	var hot []string
	var failed []failedUpdate
	g := sub.NewGroupContext(ctx)
	for start := 0; start < len(updates); start += f.cfg.RecipientChunk {
		part := updates[start:min(start+f.cfg.RecipientChunk, len(updates))]
		g.SubmitErr(func() error {
			h, fl, err := f.applyChunk(ctx, part)
			mu.Lock()
			hot = append(hot, h...)
			failed = append(failed, fl...)
			mu.Unlock()
			return err
		})
	}
	err := g.Wait()
	return hot, failed, err
}

// failedUpdate is an inbox update that can never succeed, with its error.
type failedUpdate struct {
	update redisstore.InboxUpdate
	err    error
}

// applyChunk applies updates, each on the store its user is routed to
// (users moved to the hot store meanwhile are routed again by the
// router); it returns the users that just became hot and the updates
// that failed for good (redisstore.Permanent). Any other failure is the
// error: the batch is retried.
func (f *Fanout) applyChunk(ctx context.Context, updates []redisstore.InboxUpdate) (hot []string, failed []failedUpdate, err error) {
	outs, errs := f.router.ApplyInboxes(ctx, updates)
	for i, u := range updates {
		if !errors.Is(errs[i], redisstore.ErrUserMoved) {
			f.metrics.inboxWrite(u, errs[i] != nil)
		}
		switch {
		case redisstore.Permanent(errs[i]):
			failed = append(failed, failedUpdate{update: u, err: errs[i]})
		case errs[i] != nil:
			err = errors.Join(err, errs[i])
		case outs[i] == redisstore.InboxReceiveOnly:
			f.metrics.receiveOnly.Inc()
		case outs[i] == redisstore.InboxReplayed:
			f.metrics.inboxReplayed.Inc()
		default:
			if f.observe(u.User) {
				hot = append(hot, u.User)
			}
		}
	}
	return hot, failed, err
}

// observe counts one inbox write of user and reports the user when their
// rate just crossed the hot line; it says whether to move them.
func (f *Fanout) observe(user string) bool {
	became, rate, line := f.hot.observe(f.cfg.Clock(), user, 1)
	if !became {
		return false
	}
	f.metrics.hotUsers.Set(float64(f.hot.hotCount()))
	onHot := f.router.OnHot(user)
	f.cfg.Logger.Warn("hot inbox user: write rate far above normal", "user", user,
		"writes_in_window", int64(rate), "hot_line", int64(line), "window", f.cfg.HotWindow,
		"on_hot_store", onHot)
	return f.cfg.HotRoute && !onHot
}

// moveHotUsers moves the users found hot in this batch to the hot store.
// A failed move is logged, not fatal: the user stays where they are.
func (f *Fanout) moveHotUsers(ctx context.Context, results []convResult) {
	f.metrics.hotUsers.Set(float64(f.hot.hotCount()))
	done := map[string]bool{}
	for _, r := range results {
		for _, u := range r.hot {
			if done[u] {
				continue
			}
			done[u] = true
			if err := f.router.MoveToHot(ctx, u); err != nil {
				f.metrics.moves.WithLabelValues("failed").Inc()
				f.cfg.Logger.Warn("could not move hot user", "user", u, "err", err)
				continue
			}
			f.metrics.moves.WithLabelValues("moved").Inc()
			f.cfg.Logger.Info("hot user moved to the hot store", "user", u)
		}
	}
}
