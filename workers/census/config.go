package census

import (
	"cmp"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/bounds"
)

// Defaults of Config.
const (
	DefaultEvery          = 10 * time.Minute
	DefaultPause          = 100 * time.Millisecond
	DefaultStepCount      = 200
	DefaultIdleAfter      = 30 * 24 * time.Hour
	DefaultDriftThreshold = 1000
	retryMax              = 30 * time.Second
)

// Config tunes the device census. Zero values take the defaults.
type Config struct {
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

func (c Config) withDefaults() Config {
	c.Every = cmp.Or(c.Every, DefaultEvery)
	c.Pause = cmp.Or(c.Pause, DefaultPause)
	c.StepCount = cmp.Or(c.StepCount, DefaultStepCount)
	c.IdleAfter = cmp.Or(c.IdleAfter, DefaultIdleAfter)
	c.DriftThreshold = cmp.Or(c.DriftThreshold, DefaultDriftThreshold)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	c = c.withDefaults()
	return bounds.First("census",
		bounds.NotNegative("Config.Every", c.Every),
		bounds.NotNegative("Config.Pause", c.Pause),
		bounds.Min("Config.StepCount", c.StepCount, 1),
		bounds.NotNegative("Config.IdleAfter", c.IdleAfter),
	)
}
