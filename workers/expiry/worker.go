package expiry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alitto/pond/v2"

	"github.com/offlinebox/offlinebox/backoff"
	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/retention"
	"github.com/offlinebox/offlinebox/schemas"
)

// HistoryStore is the ClickHouse history as expiry trims it: whole months
// dropped, row groups deleted through mutations (chstore.Store).
type HistoryStore interface {
	DropPartitionsBefore(ctx context.Context, before time.Time) (int, error)
	OldRowGroups(ctx context.Context, before time.Time, after string, limit int) ([]chstore.RowGroup, error)
	ConvTags(ctx context.Context, convs []string) (map[string]string, error)
	DeleteRows(ctx context.Context, groups []chstore.RowGroup, before time.Time) error
	PendingMutations(ctx context.Context) (int, error)
}

// historyJob names the partition drops among the sweep jobs, rowsJob the
// history row deletes.
const (
	historyJob = "history-partitions"
	rowsJob    = "history-rows"
)

// Removed counts what expiry removed.
type Removed struct {
	Timeline   int // timeline entries
	Mentions   int // mention references (user lanes and large groups' @all)
	Dedupe     int // dedupe buckets
	Devices    int // devices evicted with their cursors
	Partitions int // ClickHouse partitions
	RowGroups  int // ClickHouse row groups given to a delete mutation
	Scanned    int // keys looked at
	Busy       int // nodes skipped because another process was sweeping them
}

// Add adds o to r.
func (r *Removed) Add(o Removed) {
	r.Timeline += o.Timeline
	r.Mentions += o.Mentions
	r.Dedupe += o.Dedupe
	r.Devices += o.Devices
	r.Partitions += o.Partitions
	r.RowGroups += o.RowGroups
	r.Scanned += o.Scanned
	r.Busy += o.Busy
}

// Worker sweeps the Redis store and the history store for data past its
// retention.
type Worker struct {
	cfg     Config
	store   *redisstore.Store
	history HistoryStore
	m       *metrics
	pool    pond.Pool
	token   string
	// floor is the confirmed policy the sweeps keep whatever the Source
	// says (nil: none confirmed), read again before every cycle.
	floor atomic.Pointer[retention.Set]
}

// policy is what a sweep decides by: the policy in force held up by the
// one last confirmed (retention.Floored), so no sweep deletes what the
// confirmed policy keeps.
type policy interface {
	Resolve(retention.Subject) retention.Decision
	Inbox(redisstore.ConvRetention) redisstore.Retention
	LongestInboxWindows() redisstore.Retention
	LongestKept() time.Duration
	ShortestKept() time.Duration
}

// policy is the policy of this moment.
func (w *Worker) policy() policy {
	return retention.Floored{Set: w.cfg.Policies.Current(), Floor: w.floor.Load()}
}

// readFloor reads the confirmed policy (Keys.RetentionConfirmed) before a
// cycle: a cycle that cannot read it deletes nothing.
func (w *Worker) readFloor(ctx context.Context) error {
	c, ok, err := w.store.ConfirmedRetention(ctx)
	if err != nil {
		return err
	}
	f, err := retention.Floor(w.cfg.Policies.Current(), c, ok)
	if err != nil {
		return fmt.Errorf("the confirmed retention policy: %w", err)
	}
	w.floor.Store(f.Floor)
	return nil
}

// New returns a Worker. history may be nil: then ClickHouse is left alone.
func New(cfg Config, store *redisstore.Store, history HistoryStore) (*Worker, error) {
	if store == nil {
		return nil, fmt.Errorf("expiry: no Redis store")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("expiry: register metrics: %w", err)
	}
	var tok [12]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, fmt.Errorf("expiry: lease token: %w", err)
	}
	return &Worker{
		cfg: cfg, store: store, history: history, m: m,
		pool:  pond.NewPool(cfg.Concurrency),
		token: hex.EncodeToString(tok[:]),
	}, nil
}

// Run sweeps every Redis node and drops history partitions whenever they
// are due (at most once per Interval, across all processes), until ctx
// ends. A failing store is retried with backoff, never skipped.
func (w *Worker) Run(ctx context.Context) error {
	poll := min(w.cfg.Interval, time.Minute)
	retry := backoff.Policy{Min: w.cfg.RetryMin, Max: w.cfg.RetryMax}
	failures := 0
	for {
		wait := poll
		if err := w.runDue(ctx); err != nil && ctx.Err() == nil {
			w.m.errors.Inc()
			failures++
			wait = retry.Jittered(failures)
			w.cfg.Logger.Warn("expiry sweep failed; retrying", "err", err, "in", wait)
		} else {
			failures = 0
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

func (w *Worker) runDue(ctx context.Context) error {
	if err := w.readFloor(ctx); err != nil {
		return err
	}
	nodes, err := w.store.ScanNodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if _, err := w.sweepNode(ctx, n, w.cfg.Interval, false); err != nil {
			return err
		}
	}
	if w.history == nil {
		return nil
	}
	if _, err = w.dropHistory(ctx, w.cfg.Interval); err != nil {
		return err
	}
	_, err = w.trimHistoryDue(ctx, w.cfg.HistoryTrimInterval)
	return err
}

// SweepOnce runs a complete sweep cycle of every Redis node now, whatever
// the schedule, and returns what it removed. A node another process is
// sweeping at the moment is left to it (counted in Busy).
func (w *Worker) SweepOnce(ctx context.Context) (Removed, error) {
	var total Removed
	if err := w.readFloor(ctx); err != nil {
		return total, err
	}
	nodes, err := w.store.ScanNodes(ctx)
	if err != nil {
		return total, err
	}
	for _, n := range nodes {
		r, err := w.sweepNode(ctx, n, 0, true)
		total.Add(r)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// DropHistory trims ClickHouse history now, whatever the schedule: it drops
// the months past every policy and starts the row deletes that are due
// (see trimHistory). It returns how many partitions it dropped.
func (w *Worker) DropHistory(ctx context.Context) (int, error) {
	if w.history == nil {
		return 0, fmt.Errorf("expiry: no history store to drop partitions from")
	}
	if err := w.readFloor(ctx); err != nil {
		return 0, err
	}
	n, err := w.dropHistory(ctx, 0)
	if err != nil {
		return n, err
	}
	_, err = w.trimHistoryDue(ctx, 0)
	return n, err
}

func (w *Worker) dropHistory(ctx context.Context, every time.Duration) (int, error) {
	now := w.cfg.Clock()
	st, err := w.store.AcquireSweep(ctx, historyJob, w.token, w.cfg.Lease, every, now)
	if err != nil || !st.Held {
		return 0, err
	}
	// Whole months past the longest retention of the policy in force.
	cutoff := now.Add(-w.policy().LongestKept())
	n, err := w.history.DropPartitionsBefore(ctx, cutoff)
	w.m.add(Removed{Partitions: n})
	if err != nil {
		return n, fmt.Errorf("drop history partitions: %w", err)
	}
	if _, err := w.store.AdvanceSweep(ctx, historyJob, w.token, 0, 0, now); err != nil {
		return n, err
	}
	if n > 0 {
		w.cfg.Logger.Info("dropped history partitions", "count", n, "before", cutoff)
	}
	return n, nil
}

// sweepNode runs the node's sweep cycle step by step while this process
// holds its lease. With full, a cycle joined midway (left by a process that
// died) is followed by a complete one, so every key is seen.
func (w *Worker) sweepNode(ctx context.Context, node redisstore.ScanNode, every time.Duration, full bool) (Removed, error) {
	var total Removed
	fromZero := false
	for {
		now := w.cfg.Clock()
		st, err := w.store.AcquireSweep(ctx, node.Name, w.token, w.cfg.Lease, every, now)
		if err != nil {
			return total, err
		}
		if !st.Held {
			if every == 0 {
				total.Busy++
			}
			return total, nil
		}
		fromZero = fromZero || st.Cursor == 0
		r, next, err := w.step(ctx, node, st.Cursor, now)
		total.Add(r)
		if err != nil {
			return total, err
		}
		ok, err := w.store.AdvanceSweep(ctx, node.Name, w.token, st.Cursor, next, now)
		if err != nil || !ok {
			return total, err // !ok: the lease moved on; its holder goes on
		}
		if next == 0 {
			w.m.cycles.Inc()
			if fromZero || !full {
				return total, nil
			}
			every, fromZero = 0, false
		}
	}
}

// step scans one SCAN step of a node and expires what each key holds.
func (w *Worker) step(ctx context.Context, node redisstore.ScanNode, cursor uint64, now time.Time) (Removed, uint64, error) {
	keys, next, err := w.store.ScanKeys(ctx, node, cursor, w.cfg.ScanCount)
	if err != nil {
		return Removed{}, 0, err
	}
	var mu sync.Mutex
	total := Removed{Scanned: len(keys)}
	w.m.add(Removed{Scanned: len(keys)})
	g := w.pool.NewGroupContext(ctx)
	for _, k := range keys {
		g.SubmitErr(func() error {
			r, err := w.expireKey(g.Context(), k, now)
			if errors.Is(err, redisstore.ErrMalformed) {
				// No retry can fix it: leave the key to the checker.
				w.m.malformed.Inc()
				w.cfg.Logger.Warn("expiry passes over a malformed key", "key", k, "err", err)
				err = nil
			}
			w.m.add(r)
			mu.Lock()
			total.Add(r)
			mu.Unlock()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return total, 0, err
	}
	return total, next, nil
}

// expireKey applies the retention rule that fits the key's part of the
// data model; other keys are left alone.
func (w *Worker) expireKey(ctx context.Context, key string, now time.Time) (Removed, error) {
	var r Removed
	ref, ok := w.store.Keys().ParseKey(key)
	if !ok {
		return r, nil
	}
	max := w.cfg.MaxPerCall
	set := w.policy()
	switch {
	case ref.Conv != "" && ref.Part == "meta":
		for {
			got, err := w.store.ExpireConversationFor(ctx, ref.Conv, now, set.Inbox, max)
			r.Timeline += got.Timeline
			r.Mentions += got.MentionAll
			if err != nil || (got.Timeline < max && got.MentionAll < max) {
				return r, err
			}
		}
	case ref.Conv != "":
		if day, ok := ref.DedupeDay(); ok {
			gone, err := w.store.ExpireDedupe(ctx, ref.Conv, day, now)
			if gone {
				r.Dedupe++
			}
			return r, err
		}
	case ref.Part == "mn":
		n, err := w.store.ExpireMentions(ctx, ref.User, now, set.LongestInboxWindows(), max)
		r.Mentions += n
		return r, err
	case ref.Part == "dv":
		idle := now.Add(-inboxWindow(set))
		for {
			n, err := w.store.EvictDevices(ctx, ref.User, idle, max)
			r.Devices += n
			if err != nil || n < max {
				return r, err
			}
		}
	}
	return r, nil
}

// inboxWindow is how long an unused device keeps its cursor: past the
// longest conversation window it has nothing left to resume from.
func inboxWindow(set policy) time.Duration {
	r := set.LongestInboxWindows()
	return max(r.TypeWindow(schemas.ConvType_CONV_TYPE_DIRECT), r.TypeWindow(schemas.ConvType_CONV_TYPE_GROUP))
}
