package expiry

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/bounds"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/retention"
)

// Config tunes the expiry worker. Zero values take the defaults.
type Config struct {
	// Retention of timeline entries and mention references, by write time
	// (see redisstore.Retention; nothing younger than redisstore.MinRetention
	// is ever removed). Devices unused for longer than the longest
	// conversation-type window are evicted.
	Retention redisstore.Retention
	// HistoryRetention: ClickHouse partitions whose month ended longer ago
	// are dropped.
	HistoryRetention time.Duration
	// Policies, when set, replace Retention and HistoryRetention: the
	// policy file in force (retention.Source) chooses each conversation's
	// inbox window and each history row's retention, read afresh every
	// sweep step so a reloaded file takes effect without a restart.
	Policies *retention.Source
	// HistoryTrimInterval is the least time between two history row trims
	// (by any process): each reads the groups of rows older than the
	// shortest retention, so it runs less often than the Redis sweeps.
	HistoryTrimInterval time.Duration
	// HistoryBatch bounds the conversations one history trim step looks
	// at, and so the row groups one mutation names.
	HistoryBatch int
	// Interval is the least time between two sweep cycles of a Redis node
	// (by any process) and between two partition drops.
	Interval time.Duration
	// ScanCount is the COUNT of each SCAN step: the bound on one step's work.
	ScanCount int64
	// MaxPerCall bounds the entries one script call removes or examines.
	MaxPerCall int
	// Concurrency: keys of one scan step handled at once.
	Concurrency int
	// Lease on a node's sweep; renewed every step, so it must outlast one.
	Lease time.Duration
	// RetryMin and RetryMax bound the backoff while a store is down.
	RetryMin, RetryMax time.Duration
	// Clock gives the time retention is measured against (time.Now when nil).
	Clock func() time.Time
	// Logger (slog.Default when nil).
	Logger *slog.Logger
	// Metrics registers the worker's metrics (none when nil).
	Metrics prometheus.Registerer
}

// Defaults of Config.
const (
	DefaultHistoryRetention = 365 * 24 * time.Hour
	DefaultInterval         = 10 * time.Minute
	DefaultScanCount        = 500
	DefaultMaxPerCall       = 200
	DefaultConcurrency      = 4
	DefaultLease            = time.Minute
	DefaultRetryMin         = 250 * time.Millisecond
	DefaultRetryMax         = 30 * time.Second
	DefaultHistoryBatch     = 500
	DefaultHistoryTrim      = 6 * time.Hour
)

func (c Config) withDefaults() Config {
	c.HistoryRetention = cmp.Or(c.HistoryRetention, DefaultHistoryRetention)
	c.Interval = cmp.Or(c.Interval, DefaultInterval)
	c.HistoryTrimInterval = cmp.Or(c.HistoryTrimInterval, DefaultHistoryTrim)
	c.Lease = cmp.Or(c.Lease, DefaultLease)
	c.RetryMin = cmp.Or(c.RetryMin, DefaultRetryMin)
	c.RetryMax = cmp.Or(c.RetryMax, DefaultRetryMax)
	c.HistoryBatch = cmp.Or(c.HistoryBatch, DefaultHistoryBatch)
	if c.Policies == nil {
		c.Policies = retention.Fixed(retention.FromRetention(c.Retention, c.HistoryRetention))
	}
	c.ScanCount = cmp.Or(c.ScanCount, DefaultScanCount)
	c.MaxPerCall = cmp.Or(c.MaxPerCall, DefaultMaxPerCall)
	c.Concurrency = cmp.Or(c.Concurrency, DefaultConcurrency)
	if c.Clock == nil {
		c.Clock = time.Now
	}
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	if err := c.Retention.Validate(); err != nil {
		return fmt.Errorf("expiry: Retention: %w", err)
	}
	c = c.withDefaults()
	return bounds.First("expiry",
		// Partitions are months: a shorter retention would drop the
		// month still being written.
		bounds.If(c.HistoryRetention < 31*24*time.Hour, "HistoryRetention %s is below 31 days", c.HistoryRetention),
		bounds.Min("Interval", c.Interval, time.Second),
		bounds.Min("HistoryTrimInterval", c.HistoryTrimInterval, time.Second),
		bounds.Min("HistoryBatch", c.HistoryBatch, 1),
		bounds.Min("ScanCount", c.ScanCount, 1),
		bounds.Min("MaxPerCall", c.MaxPerCall, 1),
		bounds.Min("Concurrency", c.Concurrency, 1),
		bounds.Min("Lease", c.Lease, time.Second),
		bounds.Positive("RetryMin", c.RetryMin),
		bounds.If(c.RetryMax < c.RetryMin, "RetryMax %s is below RetryMin %s", c.RetryMax, c.RetryMin),
	)
}
