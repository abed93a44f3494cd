package push

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/bounds"
	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// Config tunes the push stage. Zero values take the defaults.
type Config struct {
	// Store is the Redis data model's configuration (key prefix, large
	// group threshold, call timeout).
	Store redisstore.Config
	// SequencedTopic, MessagesTopic and DeadLetterTopic name the topics
	// consumed (schemas.TopicSequenced, TopicMessages, TopicDeadLetter).
	SequencedTopic  string
	MessagesTopic   string
	DeadLetterTopic string
	// Limits: a QoS 0 record over them is not pushed (fanout's limits).
	Limits schemas.Limits
	// MemberCache bounds the conversations whose members are cached.
	MemberCache int
	// BusFormat is the form batches are published in on the live bus
	// (live.DefaultFormat, JSON, when empty): binary only once every API
	// node runs a release that reads it.
	BusFormat live.Format
	// Clock (time.Now).
	Clock func() time.Time
	// Logger (slog.Default when nil).
	Logger *slog.Logger
	// Metrics registers the stage's metrics (none when nil).
	Metrics prometheus.Registerer
}

// DefaultMemberCache is the default of Config.MemberCache.
const DefaultMemberCache = 10_000

func (c Config) withDefaults() Config {
	c.SequencedTopic = cmp.Or(c.SequencedTopic, schemas.TopicSequenced)
	c.MessagesTopic = cmp.Or(c.MessagesTopic, schemas.TopicMessages)
	c.DeadLetterTopic = cmp.Or(c.DeadLetterTopic, schemas.TopicDeadLetter)
	c.Limits = c.Limits.WithDefaults()
	c.MemberCache = cmp.Or(c.MemberCache, DefaultMemberCache)
	c.BusFormat = cmp.Or(c.BusFormat, live.DefaultFormat)
	if c.Clock == nil {
		c.Clock = time.Now
	}
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	if err := c.Store.Validate(); err != nil {
		return fmt.Errorf("push: Store: %w", err)
	}
	if err := c.Limits.Validate(); err != nil {
		return fmt.Errorf("push: %w", err)
	}
	if err := c.BusFormat.Validate(); err != nil {
		return fmt.Errorf("push: BusFormat: %w", err)
	}
	c = c.withDefaults()
	return bounds.First("push",
		bounds.Min("MemberCache", c.MemberCache, 1),
		bounds.If(c.SequencedTopic == c.MessagesTopic, "SequencedTopic and MessagesTopic are both %q", c.SequencedTopic),
	)
}

// UnusedDeadLetterTopic is the dead-letter topic to give the runner of the
// group that reads the dead-letter topic (to tell senders about refused
// records): the runner requires one apart from what it consumes,
// and the pusher never gives up on a record, so nothing is written there.
const UnusedDeadLetterTopic = "im.deadletter.push-unused"
