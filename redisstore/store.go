package redisstore

import (
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/bounds"
)

// Config is the data model's tunables. Zero values take the defaults.
type Config struct {
	// Prefix starts every key (DefaultPrefix when empty).
	Prefix string
	// LargeGroupThreshold: a group with more members is "large": no
	// per-member unread writes.
	LargeGroupThreshold int
	// DedupeWindow: how long a client_msg_id is remembered.
	DedupeWindow time.Duration
	// MaxDevices per user before the least recently used is evicted.
	MaxDevices int
	// InboxesPerCall bounds the inbox updates ApplyInboxes sends in one
	// script call (DefaultInboxesPerCall when 0; 1 is a call per update).
	InboxesPerCall int
	// CallTimeout bounds every Redis call made by the store.
	CallTimeout time.Duration
	// Fence, when set, makes every script of the sequencing path refuse
	// (ErrFenced) on a server instance it has not verified.
	Fence *Fence
	// Sealer, when set, seals bodies and previews before they are stored
	// (see sequence_sealed.go); nil stores them in the clear.
	Sealer Sealer
	// PredictCache bounds the conversations whose (epoch, seq) the sealed
	// path remembers (DefaultPredictCache when 0).
	PredictCache int
}

// Defaults of Config.
const (
	DefaultLargeGroupThreshold = 2000
	DefaultDedupeWindow        = 7 * 24 * time.Hour
	DefaultMaxDevices          = 5
	DefaultCallTimeout         = 5 * time.Second
	DefaultInboxesPerCall      = 100
	DefaultPredictCache        = 100000
)

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.LargeGroupThreshold == 0 {
		c.LargeGroupThreshold = DefaultLargeGroupThreshold
	}
	if c.DedupeWindow == 0 {
		c.DedupeWindow = DefaultDedupeWindow
	}
	if c.MaxDevices == 0 {
		c.MaxDevices = DefaultMaxDevices
	}
	if c.InboxesPerCall == 0 {
		c.InboxesPerCall = DefaultInboxesPerCall
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.PredictCache == 0 {
		c.PredictCache = DefaultPredictCache
	}
	return c
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	c = c.withDefaults()
	return bounds.First("redisstore",
		bounds.Min("LargeGroupThreshold", c.LargeGroupThreshold, 2),
		bounds.If(c.DedupeWindow < time.Hour, "DedupeWindow %s is below 1h", c.DedupeWindow),
		bounds.Min("MaxDevices", c.MaxDevices, 1),
		bounds.Min("InboxesPerCall", c.InboxesPerCall, 1),
		bounds.NotNegative("CallTimeout", c.CallTimeout),
	)
}

// Store is the Redis data model. It is safe for concurrent use.
type Store struct {
	rdb  redis.UniversalClient
	keys Keys
	cfg  Config
	// digest keys client_msg_ids in the dedupe buckets (dedupeDigest;
	// tests swap it to force digest collisions).
	digest func(cmid string) string
	// fenceCopies are the changelog fence's keys on a cluster (fence.go).
	fenceMu     sync.Mutex
	fenceCopies []string
	// predicted is each conversation's (epoch, last seq) as the last
	// sealed sequencing left it.
	predicted *positionCache
	// memberLists: the member maps sequencing answered (sequence_members.go)
	memberLists *memberLists
	// dedupeWindows: the older dedupe days sequencing read (dedupe_window.go)
	dedupeWindows *dedupeWindows
}

// New returns a Store over a standalone or cluster client.
func New(rdb redis.UniversalClient, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Store{rdb: rdb, keys: Keys{Prefix: cfg.Prefix}, cfg: cfg, digest: dedupeDigest,
		predicted: newPositionCache(cfg.PredictCache), memberLists: newMemberLists(),
		dedupeWindows: newDedupeWindows()}, nil
}

// Keys returns the key builder, for tools that inspect the store.
func (s *Store) Keys() Keys { return s.keys }

// Config returns the effective configuration.
func (s *Store) Config() Config { return s.cfg }

// Client returns the underlying client, for health checks and tools.
func (s *Store) Client() redis.UniversalClient { return s.rdb }
