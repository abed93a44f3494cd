package api

import (
	"cmp"
	"fmt"
	"time"

	"github.com/offlinebox/offlinebox/bounds"
	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/schemas"
)

// Defaults and bounds of Config and of request parameters.
const (
	DefaultMaxInFlight = 256
	// DefaultMaxPerUser bounds one user's requests admitted at once.
	DefaultMaxPerUser = 16
	// DefaultBodyTimeout bounds reading one request body.
	DefaultBodyTimeout    = 5 * time.Second
	DefaultRetryAfter     = time.Second
	DefaultQueueWait      = 5 * time.Second
	DefaultMaxBodyBytes   = 1 << 20
	DefaultRequestTimeout = 15 * time.Second
	DefaultProduceTimeout = 10 * time.Second
	DefaultMaxCursors     = 5000

	// DefaultSyncLimit is both the default and the maximum of a sync's
	// per-conversation limit.
	DefaultSyncLimit = 200
	// DefaultSyncBytes is the default byte budget of a sync answer, and
	// MinSyncBytes..MaxSyncBytes the budgets a client may ask for: how an
	// answer shares its budget is redisstore/readpath/sync_budget.go.
	DefaultSyncBytes = readpath.DefaultSyncBytes
	MinSyncBytes     = readpath.MinSyncBytes
	MaxSyncBytes     = readpath.MaxSyncBytes

	DefaultPageLimit = 50
	MaxPageLimit     = 200
	DefaultListLimit = edge.DefaultListLimit
	MaxListLimit     = edge.MaxListLimit
)

// LiveConfig tunes the live channel (package live).
type LiveConfig = live.Config

// Config tunes the server. Zero values take the defaults.
type Config struct {
	// MaxInFlight bounds the requests worked on at once; more wait for a
	// slot in arrival order (QueueWait). A request takes its slot only
	// once its body is read.
	MaxInFlight int
	// QueueWait bounds how long a request whose body is read waits for a
	// slot among MaxInFlight; one still waiting then gets 503 with
	// Retry-After. The waiting requests are bounded by MaxAdmitted.
	QueueWait time.Duration
	// MaxPerUser bounds one user's requests admitted at once, from the
	// start of reading the body to the answer; more get 429. So one user's
	// slow or many requests never use up what others need.
	MaxPerUser int
	// MaxAdmitted bounds every user's admitted requests together (those
	// reading a body included), and so the memory their bodies hold; more
	// get 503. Default 4 × MaxInFlight.
	MaxAdmitted int
	// BodyTimeout bounds reading a request body; a body slower than that
	// gets 408 and its connection is closed.
	BodyTimeout time.Duration
	// RetryAfter is what a 503 tells the client to wait.
	RetryAfter time.Duration
	// MaxBodyBytes bounds a request body; a larger one gets 400.
	MaxBodyBytes int64
	// RequestTimeout bounds the work on one request (every store call
	// also has its own timeout, see redisstore.Config.CallTimeout).
	RequestTimeout time.Duration
	// ProduceTimeout bounds producing one request's records to Kafka.
	ProduceTimeout time.Duration
	// MaxCursors bounds the cursors of one sync, the acks of one ack and
	// the receipts of one read request.
	MaxCursors int
	// Limits bound a message sent through the API: body, mentions,
	// recipients, encoded size (schemas.Limits; the fanout worker must use
	// the same, so that what the API accepts is never dead-lettered).
	Limits schemas.Limits
	// MessagesTopic and ReceiptsTopic (schemas.TopicMessages,
	// schemas.TopicReceipts).
	MessagesTopic string
	ReceiptsTopic string
	// Clock stamps receipts, acks and sent messages (time.Now).
	Clock func() time.Time
	// Live tunes the live channel.
	Live LiveConfig
}

func (c Config) withDefaults() Config {
	c.MaxInFlight = cmp.Or(c.MaxInFlight, DefaultMaxInFlight)
	c.MaxPerUser = cmp.Or(c.MaxPerUser, DefaultMaxPerUser)
	c.MaxAdmitted = cmp.Or(c.MaxAdmitted, 4*c.MaxInFlight)
	c.BodyTimeout = cmp.Or(c.BodyTimeout, DefaultBodyTimeout)
	c.RetryAfter = cmp.Or(c.RetryAfter, DefaultRetryAfter)
	c.QueueWait = cmp.Or(c.QueueWait, DefaultQueueWait)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, DefaultMaxBodyBytes)
	c.RequestTimeout = cmp.Or(c.RequestTimeout, DefaultRequestTimeout)
	c.ProduceTimeout = cmp.Or(c.ProduceTimeout, DefaultProduceTimeout)
	c.MaxCursors = cmp.Or(c.MaxCursors, DefaultMaxCursors)
	c.Limits = c.Limits.WithDefaults()
	c.MessagesTopic = cmp.Or(c.MessagesTopic, schemas.TopicMessages)
	c.ReceiptsTopic = cmp.Or(c.ReceiptsTopic, schemas.TopicReceipts)
	if c.Clock == nil {
		c.Clock = time.Now
	}
	c.Live = c.Live.WithDefaults()
	return c
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	if err := c.Limits.Validate(); err != nil {
		return fmt.Errorf("api: %w", err)
	}
	if err := c.Live.Validate(); err != nil {
		return err
	}
	c = c.withDefaults()
	return bounds.First("api",
		bounds.Min("MaxInFlight", c.MaxInFlight, 1),
		bounds.Min("MaxPerUser", c.MaxPerUser, 1),
		bounds.If(c.MaxAdmitted < c.MaxInFlight, "MaxAdmitted %d is below MaxInFlight %d", c.MaxAdmitted, c.MaxInFlight),
		bounds.Min("BodyTimeout", c.BodyTimeout, 10*time.Millisecond),
		bounds.NotNegative("QueueWait", c.QueueWait),
		bounds.If(c.RequestTimeout > 0 && c.QueueWait > c.RequestTimeout, "QueueWait %s is above RequestTimeout %s", c.QueueWait, c.RequestTimeout),
		bounds.Min("RetryAfter", c.RetryAfter, time.Second),
		bounds.Min("MaxBodyBytes", c.MaxBodyBytes, 1024),
		bounds.NotNegative("RequestTimeout", c.RequestTimeout),
		bounds.NotNegative("ProduceTimeout", c.ProduceTimeout),
		bounds.Min("MaxCursors", c.MaxCursors, 1),
		bounds.If(c.MaxBodyBytes < int64(c.Limits.BodyBytes), "MaxBodyBytes %d is below Limits.BodyBytes %d", c.MaxBodyBytes, c.Limits.BodyBytes),
	)
}
