package stream

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Defaults applied by New to zero fields of Config.
const (
	DefaultMaxPollRecords = 500
	DefaultRetryMin       = 100 * time.Millisecond
	DefaultRetryMax       = 30 * time.Second
	DefaultCommitInterval = time.Second
	DefaultCommitTimeout  = 10 * time.Second
	DefaultProduceTimeout = 30 * time.Second
	DefaultLagInterval    = 5 * time.Second
)

// Config configures a Runner. Zero fields get the defaults above; Brokers,
// Group, Topics and DeadLetterTopic are required.
type Config struct {
	// Brokers are the seed brokers, host:port.
	Brokers []string
	// Group is the consumer group; every process of one worker kind uses the
	// same group so that partitions are shared among them.
	Group string
	// Topics are consumed by the group.
	Topics []string
	// DeadLetterTopic receives the records a Handler gives up on.
	DeadLetterTopic string
	// ClientID names the Kafka client in broker logs; defaults to Group.
	ClientID string
	// MaxPollRecords bounds how many records one poll returns, summed over
	// all partitions; it bounds how long rebalances stay blocked.
	MaxPollRecords int
	// RetryMin and RetryMax bound the exponential backoff between retries of
	// a failed Handle call and of a failed dead-letter produce.
	RetryMin, RetryMax time.Duration
	// CommitInterval is how often finished offsets are committed while
	// records flow. Offsets are also committed on revoke and on shutdown.
	CommitInterval time.Duration
	// CommitTimeout bounds one offset commit request.
	CommitTimeout time.Duration
	// ProduceTimeout bounds one attempt to produce the dead letters of a
	// batch (it is also the client's record delivery timeout).
	ProduceTimeout time.Duration
	// Logger receives retry, commit and rebalance logs; defaults to
	// slog.Default().
	Logger *slog.Logger
	// Metrics, when non-nil, registers the runner's metrics with a const
	// label group=Group.
	Metrics prometheus.Registerer
	// LagInterval is how often the consumer lag of the partitions this
	// member owns is measured against the committed offsets (with Metrics
	// only); negative turns the measure off.
	LagInterval time.Duration
	// ClientMetrics also registers franz-go's kprom client metrics (broker
	// I/O, fetch and produce bytes) on Metrics.
	ClientMetrics bool
	// ExtraOpts are appended to the client options, after the runner's own
	// (so they win): session timeouts, TLS, SASL, a kgo logger.
	ExtraOpts []kgo.Opt
}

// ErrInvalidConfig is wrapped by every error of Config.Validate.
var ErrInvalidConfig = errors.New("invalid stream config")

// withDefaults returns a copy of c with every zero field defaulted.
func (c Config) withDefaults() Config {
	c.ClientID = cmp.Or(c.ClientID, c.Group)
	c.MaxPollRecords = cmp.Or(c.MaxPollRecords, DefaultMaxPollRecords)
	c.RetryMin = cmp.Or(c.RetryMin, DefaultRetryMin)
	c.RetryMax = cmp.Or(c.RetryMax, max(DefaultRetryMax, c.RetryMin))
	c.CommitInterval = cmp.Or(c.CommitInterval, DefaultCommitInterval)
	c.CommitTimeout = cmp.Or(c.CommitTimeout, DefaultCommitTimeout)
	c.ProduceTimeout = cmp.Or(c.ProduceTimeout, DefaultProduceTimeout)
	c.LagInterval = cmp.Or(c.LagInterval, DefaultLagInterval)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// Validate reports the first field of c (after defaults) that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(field, why string) error {
		return fmt.Errorf("%w: %s %s", ErrInvalidConfig, field, why)
	}
	switch {
	case len(c.Brokers) == 0:
		return bad("Brokers", "is empty")
	case slices.Contains(c.Brokers, ""):
		return bad("Brokers", "has an empty address")
	case c.Group == "":
		return bad("Group", "is empty")
	case len(c.Topics) == 0:
		return bad("Topics", "is empty")
	case slices.Contains(c.Topics, ""):
		return bad("Topics", "has an empty name")
	case c.DeadLetterTopic == "":
		return bad("DeadLetterTopic", "is empty")
	case slices.Contains(c.Topics, c.DeadLetterTopic):
		return bad("DeadLetterTopic", "is also in Topics (dead letters would be consumed again)")
	case c.MaxPollRecords < 0:
		return bad("MaxPollRecords", "is negative")
	case c.RetryMin < 0:
		return bad("RetryMin", "is negative")
	case c.RetryMax < c.RetryMin:
		return bad("RetryMax", "is below RetryMin")
	case c.CommitInterval < 0:
		return bad("CommitInterval", "is negative")
	case c.CommitTimeout < 0:
		return bad("CommitTimeout", "is negative")
	case c.ProduceTimeout < time.Second:
		return bad("ProduceTimeout", "is below 1s (franz-go's minimum record delivery timeout)")
	}
	return nil
}
