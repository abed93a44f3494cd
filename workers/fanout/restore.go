package fanout

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// ErrRestoring is the error of a Handle call made while a restore of Redis
// from im.sequenced is still under way: the runner retries the batch, and
// the next attempt continues the restore where it stopped.
var ErrRestoring = errors.New("restoring redis from the changelog")

// restorer treats Redis as a state store whose changelog is im.sequenced
// (Kafka Streams' design): every sequencing decision whose offset was
// committed is in that topic. Every script of the sequencing path runs
// only on server instances (run_ids) the restorer verified; on any other
// it refuses with redisstore.ErrFenced. A refusal, and the first batch of
// the process, make the next Handle call restore first: with every Handle
// of this process held at the gate, it replays im.sequenced from the
// "applied up to" fence each server keeps (or from the log start when a
// server keeps none), then verifies the current instances.
type restorer struct {
	f     *Fanout
	fence *redisstore.Fence
	log   changelog
	// gate: Handle calls hold it shared; a restore holds it alone.
	gate  sync.RWMutex
	stale atomic.Bool // an instance may not be verified: restore first
	// policyDue: when (unix ns) the verified servers' eviction policy is
	// read again (recheckEviction).
	policyDue atomic.Int64
	m         *restoreMetrics
	// evicted: each server's evicted_keys when verified (evictedSince).
	evictMu sync.Mutex
	evicted map[string]int64
}

func newRestorer(f *Fanout, fence *redisstore.Fence) *restorer {
	r := &restorer{f: f, fence: fence, m: f.restoreMetrics,
		log: changelog{brokers: f.cfg.Brokers, topic: f.cfg.SequencedTopic, timeout: f.store.Config().CallTimeout}}
	r.stale.Store(true)
	return r
}

// enter waits until every instance is verified (restoring when needed,
// reading their eviction policy again when due) and returns with the gate
// held shared; call release when done.
func (r *restorer) enter(ctx context.Context) (release func(), err error) {
	for {
		r.gate.RLock()
		if !r.stale.Load() {
			if err := r.recheckEviction(ctx); err != nil {
				r.gate.RUnlock()
				return nil, err
			}
			if !r.stale.Load() {
				return r.gate.RUnlock, nil
			}
		}
		r.gate.RUnlock()
		r.gate.Lock()
		if r.stale.Load() {
			err = r.restore(ctx)
		}
		r.gate.Unlock()
		if err != nil {
			return nil, err
		}
	}
}

// check marks the instances stale when err is a fence refusal.
func (r *restorer) check(err error) {
	if errors.Is(err, redisstore.ErrFenced) && !r.stale.Swap(true) {
		r.f.cfg.Logger.Warn("a redis server refused a fenced write: restoring from the changelog before the next batch",
			"err", err)
	}
}

// stores are the servers fanout writes to: the main Redis and the hot one.
func (r *restorer) stores() []*redisstore.Store {
	out := []*redisstore.Store{r.f.store}
	if r.f.hotStore != nil {
		out = append(out, r.f.hotStore)
	}
	return out
}

// restore verifies the current instances, restoring from the changelog
// first unless every one of them is verified already. It runs for at most
// Config.RestoreTimeout; a restore cut short returns ErrRestoring and the
// fence it reached, so the next call goes on from there.
func (r *restorer) restore(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.f.cfg.RestoreTimeout)
	defer cancel()
	var ids []string
	for _, st := range r.stores() {
		ins, err := st.Instances(ctx)
		if err != nil {
			return err
		}
		if err := r.trustable(ctx, st, ins); err != nil {
			return err
		}
		for _, in := range ins {
			ids = append(ids, in.RunID)
		}
	}
	r.policyRead()
	old := r.fence.Verified()
	if allIn(ids, old) {
		r.stale.Store(false)
		return nil
	}
	start := time.Now()
	// The restore's own writes may run on the new instances; no Handle
	// runs meanwhile (the gate is ours).
	r.fence.Verify(ids)
	st, err := r.replay(ctx)
	r.m.records.Add(float64(st.records))
	r.m.conflicts.Add(float64(st.conflicts))
	countFailures(st.unapplied, r.m.unappliedRecords, r.m.unappliedUpdates)
	if err != nil {
		r.fence.Verify(intersect(old, ids))
		r.m.runs.WithLabelValues("unfinished").Inc()
		r.f.cfg.Logger.Warn("restore from the changelog unfinished; the next batch goes on with it",
			"records", st.records, "since", time.Since(start).Round(time.Millisecond), "err", err)
		return fmt.Errorf("%w: %w", ErrRestoring, err)
	}
	r.stale.Store(false)
	r.m.runs.WithLabelValues("done").Inc()
	r.f.cfg.Logger.Info("redis verified against the changelog", "instances", ids, "from", st.from,
		"records", st.records, "appended", st.appended.Load(), "conflicts", st.conflicts,
		"took", time.Since(start).Round(time.Millisecond))
	return nil
}

// restoreStats counts one restore.
type restoreStats struct {
	from      map[int32]int64
	records   int // changelog records read
	appended  atomic.Int64
	conflicts int
	unapplied map[string]int // what failed for good re-applying, as convResult.failures
	mu        sync.Mutex
}

func (s *restoreStats) conflict(n int) {
	s.mu.Lock()
	s.conflicts += n
	s.mu.Unlock()
}

func (s *restoreStats) notApplied(failures map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for call, n := range failures {
		if s.unapplied == nil {
			s.unapplied = map[string]int{}
		}
		s.unapplied[call] += n
	}
}

// replay re-applies im.sequenced from the lowest fence of the servers to
// its end now, raising every server's fence after each chunk and, once
// through, to the end of every partition.
func (r *restorer) replay(ctx context.Context) (*restoreStats, error) {
	st := &restoreStats{}
	logStart, end, err := r.log.span(ctx)
	if err != nil {
		return st, err
	}
	st.from = maps.Clone(end)
	for _, s := range r.stores() {
		applied, ok, err := s.AppliedFence(ctx)
		if err != nil {
			return st, err
		}
		for p := range end {
			// A server without a fence, or without this partition's,
			// may lack anything the log still holds.
			a, has := applied[p]
			if !ok || !has {
				a = logStart[p]
			}
			st.from[p] = min(st.from[p], max(a, logStart[p]))
		}
	}
	raise := func(ctx context.Context, next map[int32]int64) error {
		for _, s := range r.stores() {
			if err := s.RaiseFence(ctx, next); err != nil {
				return err
			}
		}
		return nil
	}
	err = r.log.read(ctx, st.from, end, r.f.cfg.RestoreChunk, func(ctx context.Context, recs []*kgo.Record) error {
		st.records += len(recs)
		if err := r.f.restoreChunk(ctx, recs, st); err != nil {
			return err
		}
		next := map[int32]int64{}
		for _, rec := range recs {
			next[rec.Partition] = max(next[rec.Partition], rec.Offset+1)
		}
		return raise(ctx, next)
	})
	if err != nil {
		return st, err
	}
	return st, raise(ctx, end)
}

// restoreChunk re-applies a chunk of changelog records, conversations in
// parallel, each in its log order.
func (f *Fanout) restoreChunk(ctx context.Context, recs []*kgo.Record, st *restoreStats) error {
	var order []string
	byConv := map[string][]restoreItem{}
	for _, rec := range recs {
		sq, err := schemas.DecodeSequenced(rec.Value)
		if err != nil {
			// Fanout never produced it: nothing of ours to restore.
			f.cfg.Logger.Warn("changelog record undecodable; skipped by the restore",
				"partition", rec.Partition, "offset", rec.Offset, "err", err)
			continue
		}
		conv := sq.GetMessage().GetConvId()
		if _, ok := byConv[conv]; !ok {
			order = append(order, conv)
		}
		byConv[conv] = append(byConv[conv], restoreItem{rec: rec, sq: sq})
	}
	if len(order) == 0 {
		return nil
	}
	heads, err := f.store.ConvHeads(ctx, order)
	var broken redisstore.ItemErrors
	if errors.As(err, &broken) {
		err = nil
	}
	if err != nil {
		return err
	}
	g := f.convs.NewGroupContext(ctx)
	for i, conv := range order {
		if e := broken[i]; e != nil {
			g.SubmitErr(func() error { return f.cannotRestore(ctx, conv, len(byConv[conv]), st, e) })
			continue
		}
		g.SubmitErr(func() error {
			err := f.restoreConv(ctx, conv, byConv[conv], heads[conv], st)
			if redisstore.Permanent(err) {
				return f.cannotRestore(ctx, conv, len(byConv[conv]), st, err)
			}
			return err
		})
	}
	return g.Wait()
}

// cannotRestore gives up the restore of a conversation that can never be
// put back (a key of it holds the wrong type, or it is held already):
// trying again would fail alike and hold every partition behind the
// restore. Its n records of the chunk are conflicts, for a rebuild, and
// the conversation is held.
func (f *Fanout) cannotRestore(ctx context.Context, conv string, n int, st *restoreStats, err error) error {
	st.conflict(n)
	f.cfg.Logger.Error("restore: the conversation cannot be put back; it is held: repair its keys and rebuild it",
		"conv", conv, "records", n, "err", err)
	return f.hold(ctx, conv, fmt.Sprintf("restore: cannot be put back: %v", err))
}

// hold stops the sequencing of a conversation the restore left short of
// the changelog: its counter is below seqs the changelog gave, and a new
// record there would take one of them. Its records are dead-lettered
// (OBHELD) until a rebuild, in a new epoch, releases it; the dead letters
// are produced again then. A hold already set keeps its first reason.
func (f *Fanout) hold(ctx context.Context, conv, reason string) error {
	set, err := f.store.HoldConversation(ctx, conv, reason)
	if set {
		f.restoreMetrics.held.Inc()
	}
	return err
}

// restoreItem is one changelog record.
type restoreItem struct {
	rec *kgo.Record
	sq  *schemas.Sequenced
}

// restoreConv re-applies one conversation's changelog records through the
// path that first applied them, with their own write times: the same
// state gives the same seqs, so each must come back with the seq and epoch
// the changelog holds. A conversation whose meta vanished is first seeded
// with the changelog's epoch and first seq. Records of an older epoch (a
// timeline rebuilt since) are skipped; anything that cannot be restored
// exactly is counted as a conflict and logged, and left alone.
func (f *Fanout) restoreConv(ctx context.Context, conv string, items []restoreItem, head redisstore.ConvHead,
	st *restoreStats) (err error) {
	head, err = f.prepareRestore(ctx, conv, items, head)
	if err != nil {
		return err
	}
	keep, stop := f.restorable(conv, items, head, st)
	sub := f.chunks.NewSubpool(f.cfg.TasksPerConversation)
	defer sub.StopAndWait()
	seen := map[uint64]bool{}
	// Its dead letters are not produced: a restore commits nothing and its
	// records are im.sequenced's. An inbox update, a member listing or a
	// large group's mark that can never succeed is logged as such
	// (logFailedForGood) and counted as not re-applied, and the restore
	// goes on past it.
	res := convResult{restoring: true}
	defer func() {
		if err == nil { // a restore retried goes through the chunk again
			st.notApplied(res.failures)
		}
	}()
	done := 0 // records of keep re-applied
	for _, run := range writeTimeRuns(keep) {
		batch := make([]pending, len(run))
		for i, it := range run {
			batch[i] = pending{rec: it.rec, msg: it.sq.GetMessage()}
		}
		for _, b := range mergeBatches(batch, f.cfg.MergeSize) {
			sr, err := f.handleMerge(ctx, sub, conv, b, run[0].sq.GetWriteTimeMs(), seen, &res)
			var ns notSequenced
			if errors.As(err, &ns) {
				// Sequencing failed for good: nothing of b got a seq, and
				// what is left of the conversation is not put back.
				res.charge(deadSequence, len(b))
				return f.cannotRestore(ctx, conv, len(keep)-done, st, ns.err)
			}
			if err != nil {
				return err
			}
			done += len(b)
			if moved := st.check(f, conv, sr, run[:len(b)]); moved != "" {
				st.conflict(len(keep) - done) // the rest is not put back
				return f.hold(ctx, conv, moved)
			}
			run = run[len(b):]
		}
	}
	if stop != "" {
		return f.hold(ctx, conv, stop)
	}
	return nil
}

// prepareRestore puts back what the re-applied records need before them:
// the data key their bodies are sealed with (every record carries the
// same key, wrapped as it was then: the newest record's wrapping is the
// likeliest after a rekey) and, when Redis lost the conversation, its
// head seeded just below the first record.
func (f *Fanout) prepareRestore(ctx context.Context, conv string, items []restoreItem,
	head redisstore.ConvHead) (redisstore.ConvHead, error) {
	for i := len(items) - 1; i >= 0; i-- {
		if w := items[i].sq.GetDataKey(); w != "" {
			if _, err := f.store.PutDataKey(ctx, conv, w); err != nil {
				return head, err
			}
			break
		}
	}
	if head.Exists {
		return head, nil
	}
	first := items[0].sq
	if _, err := f.store.SeedHead(ctx, conv, first.GetEpoch(), first.GetSeq(),
		first.GetMessage().GetConvType()); err != nil {
		return head, err
	}
	return redisstore.ConvHead{Exists: true, Epoch: first.GetEpoch(), Seq: first.GetSeq() - 1}, nil
}

// restorable picks the records that can be put back on head: those of
// its epoch, up to the first that is of a newer epoch or leaves a gap.
// stop says why the records from there on cannot be put back (empty when
// all can); what comes before is put back first, then the hold.
func (f *Fanout) restorable(conv string, items []restoreItem, head redisstore.ConvHead,
	st *restoreStats) (keep []restoreItem, stop string) {
	last := head.Seq
	for i, it := range items {
		e, s := it.sq.GetEpoch(), it.sq.GetSeq()
		switch {
		case e < head.Epoch:
			continue // an older timeline's record
		case e > head.Epoch:
			f.cfg.Logger.Error("restore: the changelog holds a newer epoch than redis; rebuild the conversation",
				"conv", conv, "redis_epoch", head.Epoch, "changelog_epoch", e, "seq", s)
			stop = fmt.Sprintf("restore: the changelog holds epoch %d, redis %d", e, head.Epoch)
		case s > last+1:
			f.cfg.Logger.Error("restore: seqs missing from both redis and the changelog; rebuild the conversation",
				"conv", conv, "redis_seq", last, "changelog_seq", s)
			stop = fmt.Sprintf("restore: seqs %d to %d missing from both redis and the changelog", last+1, s-1)
		}
		if stop != "" {
			st.conflict(len(items) - i)
			return keep, stop
		}
		if s == last+1 {
			last = s
		}
		keep = append(keep, it)
	}
	return keep, ""
}

// check compares what re-applying a batch gave with the changelog; it
// returns why the conversation must be held when redis gave a record
// another place ("" when none).
func (s *restoreStats) check(f *Fanout, conv string, sr *redisstore.SequenceResult, items []restoreItem) string {
	moved := ""
	for i, it := range sr.Items {
		want := items[i].sq
		switch {
		case it.Status == redisstore.SeqRejected || it.Seq != want.GetSeq() || sr.Epoch != want.GetEpoch():
			s.conflict(1)
			f.cfg.Logger.Error("restore: redis gives a changelog record another place; rebuild the conversation",
				"conv", conv, "client_msg_id", want.GetMessage().GetClientMsgId(), "changelog_seq", want.GetSeq(),
				"changelog_epoch", want.GetEpoch(), "redis_seq", it.Seq, "redis_epoch", sr.Epoch, "status", it.Status)
			if moved == "" {
				moved = fmt.Sprintf("restore: changelog seq %d (epoch %d) came back as seq %d (epoch %d)",
					want.GetSeq(), want.GetEpoch(), it.Seq, sr.Epoch)
			}
		case it.Status == redisstore.SeqNew:
			s.appended.Add(1)
		}
	}
	return moved
}

// writeTimeRuns cuts records into runs of one write time: each was one
// sequencing call's clock, and is again.
func writeTimeRuns(items []restoreItem) [][]restoreItem {
	var out [][]restoreItem
	for i := 0; i < len(items); {
		j := i + 1
		for j < len(items) && items[j].sq.GetWriteTimeMs() == items[i].sq.GetWriteTimeMs() {
			j++
		}
		out = append(out, items[i:j])
		i = j
	}
	return out
}

func allIn(ids, set []string) bool {
	for _, id := range ids {
		if !slices.Contains(set, id) {
			return false
		}
	}
	return len(ids) > 0
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
