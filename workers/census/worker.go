package census

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/offlinebox/offlinebox/backoff"
	"github.com/offlinebox/offlinebox/redisstore"
)

// UserStores lists the stores that hold users' keys (the main store, and
// a hot store when there is one); *redisstore.InboxRouter is one.
type UserStores interface {
	UserStores() []*redisstore.Store
}

// Worker takes the device census every Config.Every.
type Worker struct {
	cfg    Config
	stores UserStores
	g      gauges
}

// New returns a census over the stores that hold users' keys.
func New(cfg Config, stores UserStores) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if stores == nil {
		return nil, errors.New("census: no stores to count users in")
	}
	cfg = cfg.withDefaults()
	g, err := newGauges(cfg.Metrics, cfg.DriftThreshold)
	if err != nil {
		return nil, err
	}
	return &Worker{cfg: cfg, stores: stores, g: g}, nil
}

// Run takes a census every Every until ctx ends (then it returns nil).
func (w *Worker) Run(ctx context.Context) error {
	for {
		start := w.cfg.Clock()
		if _, err := w.RunOnce(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if !sleepCtx(ctx, max(w.cfg.Every-w.cfg.Clock().Sub(start), w.cfg.Pause)) {
			return nil
		}
	}
}

// RunOnce takes one census over every node of every store holding users'
// keys and publishes it. A store that fails is waited for (the step is
// retried with backoff) until ctx ends.
func (w *Worker) RunOnce(ctx context.Context) (redisstore.DeviceCensus, error) {
	var total redisstore.DeviceCensus
	idleBefore := w.cfg.Clock().Add(-w.cfg.IdleAfter)
	for _, st := range w.stores.UserStores() {
		var nodes []redisstore.ScanNode
		err := w.retry(ctx, "list nodes", func() error {
			var err error
			nodes, err = st.ScanNodes(ctx)
			return err
		})
		if err != nil {
			return total, err
		}
		for _, n := range nodes {
			got, err := w.censusNode(ctx, st, n, idleBefore)
			if err != nil {
				return total, err
			}
			total.Add(got)
		}
	}
	w.g.publish(total, float64(w.cfg.Clock().UnixMilli())/1000)
	return total, nil
}

func (w *Worker) censusNode(ctx context.Context, st *redisstore.Store, n redisstore.ScanNode, idleBefore time.Time) (redisstore.DeviceCensus, error) {
	var sum redisstore.DeviceCensus
	for cursor := uint64(0); ; {
		var step redisstore.DeviceCensus
		next := cursor
		err := w.retry(ctx, "census step on "+n.Name, func() error {
			var err error
			step, next, err = st.CensusStep(ctx, n, cursor, w.cfg.StepCount, idleBefore, w.cfg.DriftThreshold)
			return err
		})
		if err != nil {
			return sum, err
		}
		sum.Add(step)
		if cursor = next; cursor == 0 {
			return sum, nil
		}
		if !sleepCtx(ctx, w.cfg.Pause) {
			return sum, ctx.Err()
		}
	}
}

// retry runs f until it succeeds, backing off, or ctx ends.
func (w *Worker) retry(ctx context.Context, what string, f func() error) error {
	p := backoff.Policy{Min: max(w.cfg.Pause, 10*time.Millisecond), Max: retryMax}
	err := backoff.Retry(ctx, p, func(context.Context) error { return f() }, func(attempt int, err error) {
		w.cfg.Logger.Warn("device census: store failed; retrying", "step", what, "err", err, "attempt", attempt)
	})
	if err != nil {
		return fmt.Errorf("device census: %s: %w", what, err)
	}
	return nil
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
