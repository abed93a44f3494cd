package verify

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/offlinebox/offlinebox/bounds"
	"github.com/offlinebox/offlinebox/redisstore"
)

// Config tunes a check. Zero values take the defaults.
type Config struct {
	// ScanCount is the COUNT of each SCAN step.
	ScanCount int64
	// Chunk is how many timeline entries one read checks or loads.
	Chunk int
	// MaxProblems kept in the report; the rest are only counted.
	MaxProblems int
	// MaxCachedEntries bounds the senders kept in memory for recounts.
	MaxCachedEntries int
	// MentionWindow, when above 0, is how far back a pending mention must
	// be in its lane: expiry trims the lane by the conversation type's
	// window, which may be shorter than what a hold keeps of the
	// timeline. 0: every pending mention the timeline holds.
	MentionWindow time.Duration
	// Now is the clock MentionWindow counts back from (time.Now when nil).
	Now func() time.Time
}

// Defaults of Config.
const (
	DefaultScanCount        = 500
	DefaultChunk            = 1000
	DefaultMaxProblems      = 1000
	DefaultMaxCachedEntries = 1_000_000
)

func (c Config) withDefaults() Config {
	c.ScanCount = cmp.Or(c.ScanCount, DefaultScanCount)
	c.Chunk = cmp.Or(c.Chunk, DefaultChunk)
	c.MaxProblems = cmp.Or(c.MaxProblems, DefaultMaxProblems)
	c.MaxCachedEntries = cmp.Or(c.MaxCachedEntries, DefaultMaxCachedEntries)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	c = c.withDefaults()
	return bounds.First("verify",
		bounds.Min("ScanCount", c.ScanCount, 1),
		bounds.Min("Chunk", c.Chunk, 1),
		bounds.Min("MaxProblems", c.MaxProblems, 1),
		bounds.Min("MaxCachedEntries", c.MaxCachedEntries, 1),
		bounds.NotNegative("MentionWindow", c.MentionWindow),
	)
}

// Checker checks a store. It only reads.
type Checker struct {
	cfg       Config
	main, hot *redisstore.Store
}

// New returns a Checker of the main store and, when not nil, the hot store
// that holds the keys of users moved there.
func New(cfg Config, main, hot *redisstore.Store) (*Checker, error) {
	if main == nil {
		return nil, fmt.Errorf("verify: no store")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Checker{cfg: cfg.withDefaults(), main: main, hot: hot}, nil
}

// run is the state of one Run.
type run struct {
	*Checker
	rep     *Report
	senders *senderCache
	// mentionsFrom: the write time (unix ms) from which a pending mention
	// must be in its lane
	mentionsFrom int64
}

// Run walks every key of the store(s) and returns what it found. An error
// means the walk could not finish (a store is down); the report then
// holds what was found so far.
func (c *Checker) Run(ctx context.Context) (*Report, error) {
	r := &run{Checker: c, rep: &Report{}, senders: newSenderCache(c.main, c.cfg.Chunk, c.cfg.MaxCachedEntries)}
	if c.cfg.MentionWindow > 0 {
		r.mentionsFrom = c.cfg.Now().Add(-c.cfg.MentionWindow).UnixMilli()
	}
	stores := []*redisstore.Store{c.main}
	if c.hot != nil {
		stores = append(stores, c.hot)
	}
	for _, st := range stores {
		if err := r.walk(ctx, st); err != nil {
			return r.rep, err
		}
	}
	return r.rep, nil
}

func (r *run) walk(ctx context.Context, st *redisstore.Store) error {
	nodes, err := st.ScanNodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		for cursor := uint64(0); ; {
			keys, next, err := st.ScanKeys(ctx, n, cursor, r.cfg.ScanCount)
			if err != nil {
				return err
			}
			for _, k := range keys {
				if err := r.key(ctx, st, k); err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return nil
}

// key checks what one key is about. SCAN may return a key twice; a
// repeated check finds the same, so such a key is reported twice at worst.
func (r *run) key(ctx context.Context, st *redisstore.Store, key string) error {
	ref, ok := st.Keys().ParseKey(key)
	if !ok {
		return nil
	}
	onMain := st == r.main
	switch {
	case ref.Conv != "" && onMain && ref.Part == "meta":
		return r.checkConv(ctx, ref.Conv)
	case ref.Conv != "" && onMain && ref.Part == "tl":
		return r.checkOrphanTimeline(ctx, ref.Conv)
	case ref.Conv != "" && onMain && ref.Part == "held":
		return r.checkHeld(ctx, ref.Conv)
	case ref.User != "" && ref.Part == "ib":
		if err := r.checkInbox(ctx, st, ref.User); err != nil {
			return err
		}
		return r.checkListIndex(ctx, st, ref.User)
	case ref.User != "" && ref.Part == "mn":
		return r.checkMentions(ctx, st, ref.User)
	case ref.User != "" && ref.Part == "dv":
		return r.checkDevices(ctx, st, ref.User)
	case ref.User != "" && strings.HasPrefix(ref.Part, "cur:"):
		return r.checkCursor(ctx, st, ref.User, strings.TrimPrefix(ref.Part, "cur:"))
	}
	return nil
}

// skip reports whether st's copy of a user is stale: moved to the hot store.
func (r *run) skip(st *redisstore.Store, moved bool) bool {
	return moved && st == r.main && r.hot != nil
}

func (r *run) problem(kind, conv, user, format string, args ...any) {
	r.rep.add(r.cfg.MaxProblems, Problem{Kind: kind, Conv: conv, User: user, Detail: fmt.Sprintf(format, args...)})
}
