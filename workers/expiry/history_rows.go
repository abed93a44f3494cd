package expiry

import (
	"context"
	"fmt"
	"time"

	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/retention"
)

// trimHistoryDue runs trimHistory when its job is due (every 0: now),
// in one process at a time.
func (w *Worker) trimHistoryDue(ctx context.Context, every time.Duration) (int, error) {
	now := w.cfg.Clock()
	st, err := w.store.AcquireSweep(ctx, rowsJob, w.token, w.cfg.Lease, every, now)
	if err != nil || !st.Held {
		return 0, err
	}
	n, err := w.trimHistory(ctx, w.policy(), now)
	if err != nil {
		return n, err
	}
	_, err = w.store.AdvanceSweep(ctx, rowsJob, w.token, 0, 0, now)
	return n, err
}

// trimHistory deletes the history rows past their policy's retention that
// the partition drops left: it walks the conversations holding rows older
// than the shortest retention any policy gives, decides each group of rows
// (conversation, kind, content type) by its conversation's tag, and hands
// the groups past their retention to one delete mutation per distinct
// retention. While an earlier mutation is still running it starts none (a
// mutation rewrites parts; stacking them only repeats the work). It
// returns how many row groups it gave to mutations.
func (w *Worker) trimHistory(ctx context.Context, set policy, now time.Time) (int, error) {
	pending, err := w.history.PendingMutations(ctx)
	if err != nil {
		return 0, err
	}
	if pending > 0 {
		w.cfg.Logger.Info("history row deletes wait for running mutations", "pending", pending)
		return 0, nil
	}
	before := now.Add(-set.ShortestKept())
	total, after := 0, ""
	for {
		groups, err := w.history.OldRowGroups(ctx, before, after, w.cfg.HistoryBatch)
		if err != nil || len(groups) == 0 {
			return total, err
		}
		n, err := w.deleteDue(ctx, set, now, groups)
		total += n
		w.m.add(Removed{RowGroups: n})
		if err != nil {
			return total, err
		}
		after = groups[len(groups)-1].Conv
	}
}

// deleteDue decides a batch of row groups and starts their deletes.
func (w *Worker) deleteDue(ctx context.Context, set policy, now time.Time, groups []chstore.RowGroup) (int, error) {
	convs := make([]string, 0, len(groups))
	for i, g := range groups {
		if i == 0 || groups[i-1].Conv != g.Conv {
			convs = append(convs, g.Conv)
		}
	}
	tags, err := w.history.ConvTags(ctx, convs)
	if err != nil {
		return 0, err
	}
	due := map[time.Duration][]chstore.RowGroup{}
	for _, g := range groups {
		d := set.Resolve(retention.Subject{Conv: g.Conv, Tag: tags[g.Conv], ConvType: g.ConvType, Kind: g.Kind, ContentType: g.ContentType})
		if g.Oldest.Before(now.Add(-d.Kept)) {
			due[d.Kept] = append(due[d.Kept], g)
		}
	}
	n := 0
	for kept, gs := range due {
		if err := w.history.DeleteRows(ctx, gs, now.Add(-kept)); err != nil {
			return n, fmt.Errorf("trim history: %w", err)
		}
		n += len(gs)
		w.cfg.Logger.Info("history rows past their retention are being deleted", "groups", len(gs), "kept", kept, "before", now.Add(-kept))
	}
	return n, nil
}
