package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/internal/backoff"
	"github.com/offlinebox/offlinebox/redisstore"
)

// Defaults of CensusConfig.
const (
	DefaultCensusEvery     = 10 * time.Minute
	DefaultCensusPause     = 100 * time.Millisecond
	DefaultCensusStep      = 200
	DefaultCensusIdleAfter = 30 * 24 * time.Hour
	DefaultDriftThreshold  = 1000
	censusRetryMax         = 30 * time.Second
)

// CensusConfig tunes the device census. Zero values take the defaults.
type CensusConfig struct {
	// Every is the least time from the start of one census to the start
	// of the next.
	Every time.Duration
	// Pause between two scan steps: a census is a full scan of the users,
	// paced so that it never competes with the pipeline for Redis.
	Pause time.Duration
	// StepCount is the SCAN COUNT of one step, the bound on its work.
	StepCount int64
	// IdleAfter: a user none of whose devices acked for this long has not
	// pulled.
	IdleAfter time.Duration
	// DriftThreshold: a user whose devices' cursors differ by more than
	// this many seqs (summed over conversations) has drifted.
	DriftThreshold uint64
	// Metrics registers the gauges (none when nil).
	Metrics prometheus.Registerer
	// Logger (slog.Default when nil).
	Logger *slog.Logger
	// Clock (time.Now).
	Clock func() time.Time
}

func (c CensusConfig) withDefaults() CensusConfig {
	if c.Every == 0 {
		c.Every = DefaultCensusEvery
	}
	if c.Pause == 0 {
		c.Pause = DefaultCensusPause
	}
	if c.StepCount == 0 {
		c.StepCount = DefaultCensusStep
	}
	if c.IdleAfter == 0 {
		c.IdleAfter = DefaultCensusIdleAfter
	}
	if c.DriftThreshold == 0 {
		c.DriftThreshold = DefaultDriftThreshold
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c
}

// Validate reports the first field that is out of range.
func (c CensusConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Every < 0:
		return fmt.Errorf("api: CensusConfig.Every %s is negative", c.Every)
	case c.Pause < 0:
		return fmt.Errorf("api: CensusConfig.Pause %s is negative", c.Pause)
	case c.StepCount < 1:
		return fmt.Errorf("api: CensusConfig.StepCount %d is below 1", c.StepCount)
	case c.IdleAfter < 0:
		return fmt.Errorf("api: CensusConfig.IdleAfter %s is negative", c.IdleAfter)
	}
	return nil
}

// Census keeps the gauges the design asks for beside pull latency and
// sizes: users who have not pulled for 30 days (a reconnect storm waiting
// to happen) and the share of users whose devices drifted apart.
//
// Neither can be seen on the request path: a user who does not pull sends
// no request, and a user's drift needs every device's cursor while an ack
// touches one. So a census scans the users' keys in paced steps (SCAN of
// the inbox keys, one read-only script per user: at most 5 devices and
// their cursors) and publishes the counts when a pass over every node is
// complete. Run it in one process; the gauges describe the whole store.
type Census struct {
	cfg    CensusConfig
	router *redisstore.InboxRouter
	g      censusGauges
}

type censusGauges struct {
	users, idle, multi, drifted, share, done, threshold prometheus.Gauge
}

// NewCensus returns a census over the stores of router.
func NewCensus(cfg CensusConfig, router *redisstore.InboxRouter) (*Census, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if router == nil {
		return nil, errors.New("api: the census needs a router")
	}
	cfg = cfg.withDefaults()
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	g := censusGauges{
		users: gauge("offlinebox_users", "Users with an inbox, as of the last complete device census."),
		idle: gauge("offlinebox_users_not_pulled",
			"Users none of whose devices acked within the census idle window (30 days by default), never-pulled users included."),
		multi: gauge("offlinebox_users_multi_device", "Users with two or more devices."),
		drifted: gauge("offlinebox_users_device_drift",
			"Users whose devices' cursors differ by more than the drift threshold (seqs summed over conversations)."),
		share: gauge("offlinebox_users_device_drift_ratio",
			"Share (0 to 1) of users with two or more devices whose devices differ by more than the drift threshold."),
		done: gauge("offlinebox_device_census_completed_timestamp_seconds", "Unix time the last device census completed."),
		threshold: gauge("offlinebox_device_census_drift_threshold",
			"The drift threshold N of the census: seqs, summed over conversations, by which a user's devices may differ."),
	}
	g.threshold.Set(float64(cfg.DriftThreshold))
	if cfg.Metrics != nil {
		for _, c := range []prometheus.Collector{g.users, g.idle, g.multi, g.drifted, g.share, g.done, g.threshold} {
			if err := cfg.Metrics.Register(c); err != nil {
				return nil, fmt.Errorf("api: register census metrics: %w", err)
			}
		}
	}
	return &Census{cfg: cfg, router: router, g: g}, nil
}

// Run takes a census every Every until ctx ends (then it returns nil).
func (c *Census) Run(ctx context.Context) error {
	for {
		start := c.cfg.Clock()
		if _, err := c.RunOnce(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if !sleepCtx(ctx, max(c.cfg.Every-c.cfg.Clock().Sub(start), c.cfg.Pause)) {
			return nil
		}
	}
}

// RunOnce takes one census over every node of every store holding users'
// keys and publishes it. A store that fails is waited for (the step is
// retried with backoff) until ctx ends.
func (c *Census) RunOnce(ctx context.Context) (redisstore.DeviceCensus, error) {
	var total redisstore.DeviceCensus
	idleBefore := c.cfg.Clock().Add(-c.cfg.IdleAfter)
	for _, st := range c.router.UserStores() {
		var nodes []redisstore.ScanNode
		err := c.retry(ctx, "list nodes", func() error {
			var err error
			nodes, err = st.ScanNodes(ctx)
			return err
		})
		if err != nil {
			return total, err
		}
		for _, n := range nodes {
			got, err := c.censusNode(ctx, st, n, idleBefore)
			if err != nil {
				return total, err
			}
			total.Add(got)
		}
	}
	c.publish(total)
	return total, nil
}

func (c *Census) censusNode(ctx context.Context, st *redisstore.Store, n redisstore.ScanNode, idleBefore time.Time) (redisstore.DeviceCensus, error) {
	var sum redisstore.DeviceCensus
	for cursor := uint64(0); ; {
		var step redisstore.DeviceCensus
		next := cursor
		err := c.retry(ctx, "census step on "+n.Name, func() error {
			var err error
			step, next, err = st.CensusStep(ctx, n, cursor, c.cfg.StepCount, idleBefore, c.cfg.DriftThreshold)
			return err
		})
		if err != nil {
			return sum, err
		}
		sum.Add(step)
		if cursor = next; cursor == 0 {
			return sum, nil
		}
		if !sleepCtx(ctx, c.cfg.Pause) {
			return sum, ctx.Err()
		}
	}
}

// retry runs f until it succeeds, backing off, or ctx ends.
func (c *Census) retry(ctx context.Context, what string, f func() error) error {
	p := backoff.Policy{Min: max(c.cfg.Pause, 10*time.Millisecond), Max: censusRetryMax}
	err := backoff.Retry(ctx, p, func(context.Context) error { return f() }, func(attempt int, err error) {
		c.cfg.Logger.Warn("device census: store failed; retrying", "step", what, "err", err, "attempt", attempt)
	})
	if err != nil {
		return fmt.Errorf("device census: %s: %w", what, err)
	}
	return nil
}

func (c *Census) publish(t redisstore.DeviceCensus) {
	c.g.users.Set(float64(t.Users))
	c.g.idle.Set(float64(t.Idle))
	c.g.multi.Set(float64(t.MultiDevice))
	c.g.drifted.Set(float64(t.Drifted))
	share := 0.0
	if t.MultiDevice > 0 {
		share = float64(t.Drifted) / float64(t.MultiDevice)
	}
	c.g.share.Set(share)
	c.g.done.Set(float64(c.cfg.Clock().UnixMilli()) / 1000)
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
