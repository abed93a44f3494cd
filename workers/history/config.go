package history

import (
	"cmp"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/bounds"
)

// Config tunes the history sink. Zero values take the defaults.
type Config struct {
	// MaxBatchRows bounds the rows of one INSERT; a Handle call with more
	// records inserts them in several.
	MaxBatchRows int
	// MaxBatchBytes bounds the summed record values of one INSERT, so a
	// poll of large bodies does not become one huge block in memory.
	MaxBatchBytes int
	// InsertTimeout bounds one INSERT, so a hung server fails the call
	// (and the runner retries) well before the group's rebalance timeout.
	InsertTimeout time.Duration
	// Logger (slog.Default when nil).
	Logger *slog.Logger
	// Metrics registers the sink's metrics (none when nil).
	Metrics prometheus.Registerer
}

// Defaults of Config.
const (
	DefaultMaxBatchRows  = 10000
	DefaultMaxBatchBytes = 32 << 20
	DefaultInsertTimeout = 30 * time.Second
)

// RecommendedMaxPollRecords is the stream.Config.MaxPollRecords this sink
// is meant to run with: each poll becomes at most one INSERT per partition,
// and ClickHouse wants few large inserts rather than many small ones.
const RecommendedMaxPollRecords = 10000

func (c Config) withDefaults() Config {
	c.MaxBatchRows = cmp.Or(c.MaxBatchRows, DefaultMaxBatchRows)
	c.MaxBatchBytes = cmp.Or(c.MaxBatchBytes, DefaultMaxBatchBytes)
	c.InsertTimeout = cmp.Or(c.InsertTimeout, DefaultInsertTimeout)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	c = c.withDefaults()
	return bounds.First("history",
		bounds.Min("MaxBatchRows", c.MaxBatchRows, 1),
		bounds.Min("MaxBatchBytes", c.MaxBatchBytes, 1),
		bounds.NotNegative("InsertTimeout", c.InsertTimeout),
	)
}
