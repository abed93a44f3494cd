package fanout

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/bounds"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// Config tunes the fanout worker. Zero values take the defaults.
type Config struct {
	// Store is the Redis data model's configuration (key prefix, large-group
	// threshold, dedupe window, call timeout).
	Store redisstore.Config
	// SequencedTopic receives the sequenced records (schemas.TopicSequenced).
	SequencedTopic string
	// Limits: a record over any of them is a dead letter, refused before
	// it is sequenced (schemas.Limits; the API must use the same).
	Limits schemas.Limits
	// MergeSize bounds the records of one conversation that share one
	// sequencing call and one inbox call per recipient.
	MergeSize int
	// Conversations is how many conversations are worked on at once, over
	// all partitions (the shared conversation pool).
	Conversations int
	// Workers is the shared pool of recipient-chunk tasks.
	Workers int
	// TasksPerConversation bounds the recipient-chunk tasks of one
	// conversation running at once (its sub-pool of Workers).
	TasksPerConversation int
	// RecipientChunk is how many recipients one task updates, in one
	// pipelined round trip.
	RecipientChunk int
	// ProduceTimeout bounds producing one batch's sequenced records.
	ProduceTimeout time.Duration
	// Brokers are the Kafka seeds a restore reads im.sequenced from
	// (restore.go). Required.
	Brokers []string
	// RestoreTimeout bounds one restore step; a longer restore goes on in
	// the next batch's attempt from the fence it reached.
	RestoreTimeout time.Duration
	// RestoreChunk is how many changelog records a restore applies before
	// it raises the fence.
	RestoreChunk int
	// EvictionRecheck is how long a verified server's maxmemory-policy is
	// trusted before a batch reads it again (eviction.go): a policy that
	// may evict keys, set at runtime, stops sequencing within about this.
	EvictionRecheck time.Duration
	// HotRedis, when set, is the Redis that hot users' keys move to. The
	// caller dials it (by redisstore.ParseAddr's rule, once per process)
	// and closes it after Close.
	HotRedis redis.UniversalClient
	// HotRoute moves users detected hot to HotRedis. Without it hot users
	// are only reported.
	HotRoute bool
	// HotWindow is the sliding window over which inbox write rates are
	// measured.
	HotWindow time.Duration
	// HotFactor: a user with more than HotFactor times the mean writes per
	// active user in the window is hot ...
	HotFactor float64
	// HotMinWrites: ... and at least this many writes in the window.
	HotMinWrites int
	// RouterRefresh is how long the list of hot users is trusted before it
	// is read again.
	RouterRefresh time.Duration
	// Clock gives write times (time.Now); tests inject their own.
	Clock func() time.Time
	// Logger (slog.Default when nil).
	Logger *slog.Logger
	// Metrics registers the worker's metrics (none when nil).
	Metrics prometheus.Registerer
}

// Defaults of Config.
const (
	DefaultMergeSize            = 20
	DefaultConversations        = 16
	DefaultWorkers              = 32
	DefaultTasksPerConversation = 5
	DefaultRecipientChunk       = 100
	DefaultProduceTimeout       = 30 * time.Second
	DefaultRestoreTimeout       = 10 * time.Second
	DefaultRestoreChunk         = 2000
	DefaultEvictionRecheck      = 10 * time.Second
	DefaultHotWindow            = time.Minute
	DefaultHotFactor            = 50
	DefaultHotMinWrites         = 600
)

// RecommendedMaxPollRecords is the stream.Config.MaxPollRecords to run
// with: a poll large enough that busy conversations fill merge batches.
const RecommendedMaxPollRecords = 2000

func (c Config) withDefaults() Config {
	c.SequencedTopic = cmp.Or(c.SequencedTopic, schemas.TopicSequenced)
	c.Limits = c.Limits.WithDefaults()
	c.MergeSize = cmp.Or(c.MergeSize, DefaultMergeSize)
	c.Conversations = cmp.Or(c.Conversations, DefaultConversations)
	c.Workers = cmp.Or(c.Workers, DefaultWorkers)
	c.TasksPerConversation = cmp.Or(c.TasksPerConversation, DefaultTasksPerConversation)
	c.RecipientChunk = cmp.Or(c.RecipientChunk, DefaultRecipientChunk)
	c.ProduceTimeout = cmp.Or(c.ProduceTimeout, DefaultProduceTimeout)
	c.RestoreTimeout = cmp.Or(c.RestoreTimeout, DefaultRestoreTimeout)
	c.RestoreChunk = cmp.Or(c.RestoreChunk, DefaultRestoreChunk)
	c.EvictionRecheck = cmp.Or(c.EvictionRecheck, DefaultEvictionRecheck)
	c.HotWindow = cmp.Or(c.HotWindow, DefaultHotWindow)
	c.HotFactor = cmp.Or(c.HotFactor, DefaultHotFactor)
	c.HotMinWrites = cmp.Or(c.HotMinWrites, DefaultHotMinWrites)
	if c.Clock == nil {
		c.Clock = time.Now
	}
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	if err := c.Store.Validate(); err != nil {
		return fmt.Errorf("fanout: Store: %w", err)
	}
	if err := c.Limits.Validate(); err != nil {
		return fmt.Errorf("fanout: %w", err)
	}
	c = c.withDefaults()
	return bounds.First("fanout",
		bounds.Min("MergeSize", c.MergeSize, 1),
		bounds.Min("Conversations", c.Conversations, 1),
		bounds.Min("TasksPerConversation", c.TasksPerConversation, 1),
		bounds.If(c.Workers < c.TasksPerConversation, "Workers %d is below TasksPerConversation %d", c.Workers, c.TasksPerConversation),
		bounds.Min("RecipientChunk", c.RecipientChunk, 1),
		bounds.NotNegative("ProduceTimeout", c.ProduceTimeout),
		bounds.If(len(c.Brokers) == 0, "Brokers is empty: a restore reads %s from them", c.SequencedTopic),
		bounds.Min("RestoreTimeout", c.RestoreTimeout, time.Second),
		bounds.Min("RestoreChunk", c.RestoreChunk, 1),
		bounds.NotNegative("EvictionRecheck", c.EvictionRecheck),
		bounds.If(c.HotRoute && c.HotRedis == nil, "HotRoute needs HotRedis"),
		bounds.Min("HotWindow", c.HotWindow, time.Second),
		bounds.Above("HotFactor", c.HotFactor, 1),
		bounds.Min("HotMinWrites", c.HotMinWrites, 1),
		bounds.NotNegative("RouterRefresh", c.RouterRefresh),
	)
}
