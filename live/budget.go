package live

import (
	"sync"
	"time"

	"github.com/offlinebox/offlinebox/edge"
)

// Ephemeral (QoS 0) frames pass two token buckets before they cost a
// store read or a produce: the connection's and its user's (all their
// connections on this node). A frame over either is dropped and counted
// (offlinebox_live_ephemeral_refused_total, by reason); a connection
// that has more than Live.EphemeralMaxDrops frames dropped within
// Live.EphemeralDropWindow is closed with CloseEphemeralFlood.

// Reasons an ephemeral frame is refused.
const (
	ephemeralConnRate   = "conn_rate"
	ephemeralUserRate   = "user_rate"
	ephemeralUsersFull  = "users_full"
	ephemeralTooLarge   = "too_large"
	ephemeralBadContent = "content_type"
)

// MaxTypingBody bounds the body of a typing frame.
const MaxTypingBody = 256

// typingContentTypes are the content types a typing frame may carry (empty
// is the first).
var typingContentTypes = map[string]bool{"": true, "application/x-typing": true, "application/x-typing-stopped": true}

// tokenBucket holds up to burst tokens, refilled at rate a second.
type tokenBucket struct {
	tokens float64
	last   time.Time
}

// take takes a token at now; a new bucket (zero last) starts full.
func (b *tokenBucket) take(now time.Time, rate float64, burst int) bool {
	if b.last.IsZero() {
		b.tokens = float64(burst)
	} else if d := now.Sub(b.last).Seconds(); d > 0 {
		b.tokens = min(float64(burst), b.tokens+d*rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// connBudget is one connection's bucket and its recent drops.
type connBudget struct {
	// mu guards the fields below; no other lock is taken while it is
	// held.
	mu          sync.Mutex
	bucket      tokenBucket
	drops       int
	windowStart time.Time
}

// take answers whether a frame passes at now, and whether the connection
// has now dropped too many to be kept.
func (b *connBudget) take(now time.Time, cfg Config) (ok, flood bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bucket.take(now, cfg.EphemeralConnRate, cfg.EphemeralConnBurst) {
		return true, false
	}
	return false, b.dropLocked(now, cfg)
}

// drop counts a frame dropped for another reason than the connection's
// bucket (its user's); it answers whether the connection dropped too many.
func (b *connBudget) drop(now time.Time, cfg Config) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropLocked(now, cfg)
}

func (b *connBudget) dropLocked(now time.Time, cfg Config) bool {
	if now.Sub(b.windowStart) > cfg.EphemeralDropWindow {
		b.windowStart, b.drops = now, 0
	}
	b.drops++
	return b.drops > cfg.EphemeralMaxDrops
}

// userBudgets are the users' buckets, at most max of them: a bucket that
// has refilled (idle for burst/rate) is the same as none, so such ones
// are swept when the map is full (at most once a second); if it is still
// full, a new user's frame is dropped (users_full).
type userBudgets struct {
	// mu guards m and lastSweep (max, rate and burst are set once); no
	// other lock is taken while it is held.
	mu        sync.Mutex
	m         map[string]*tokenBucket
	max       int
	rate      float64
	burst     int
	lastSweep time.Time
}

func newUserBudgets(cfg Config) *userBudgets {
	return &userBudgets{m: map[string]*tokenBucket{}, max: cfg.EphemeralUsers, rate: cfg.EphemeralUserRate, burst: cfg.EphemeralUserBurst}
}

// take answers whether user's frame passes at now, or the reason it is
// dropped.
func (u *userBudgets) take(now time.Time, user string) (bool, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	b, ok := u.m[user]
	if !ok {
		if len(u.m) >= u.max {
			u.sweepLocked(now)
		}
		if len(u.m) >= u.max {
			return false, ephemeralUsersFull
		}
		b = &tokenBucket{}
		u.m[user] = b
	}
	if !b.take(now, u.rate, u.burst) {
		return false, ephemeralUserRate
	}
	return true, ""
}

// sweepLocked drops the buckets that are full again.
func (u *userBudgets) sweepLocked(now time.Time) {
	if now.Sub(u.lastSweep) < time.Second {
		return
	}
	u.lastSweep = now
	idle := time.Duration(float64(u.burst) / u.rate * float64(time.Second))
	for user, b := range u.m {
		if now.Sub(b.last) >= idle {
			delete(u.m, user)
		}
	}
}

// size is how many users' buckets are kept.
func (u *userBudgets) size() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.m)
}

// ephemeralBudget checks an ephemeral frame's shape and takes it from the
// connection's and the user's buckets, before it costs a store read: it
// answers whether the frame goes on, and the error to answer (nil for a
// frame over the budget, which is dropped silently; a connection that
// keeps flooding is closed).
func (h *liveHub) ephemeralBudget(c *liveConn, f clientFrame) (bool, error) {
	m := h.metrics
	switch {
	case len(f.Body) > MaxTypingBody:
		m.ephemeralRefused.WithLabelValues(ephemeralTooLarge).Inc()
		return false, edge.BadRequest("body", "is %d bytes, over the %d a typing frame may carry", len(f.Body), MaxTypingBody)
	case !typingContentTypes[f.ContentType]:
		m.ephemeralRefused.WithLabelValues(ephemeralBadContent).Inc()
		return false, edge.BadRequest("content_type", "%q is not one of application/x-typing, application/x-typing-stopped", truncated(f.ContentType))
	}
	cfg := h.cfg
	now := time.Now()
	ok, flood := c.typing.take(now, cfg)
	reason := ephemeralConnRate
	if ok {
		if ok, reason = h.typing.take(now, c.user); !ok {
			flood = c.typing.drop(now, cfg)
		}
	}
	if ok {
		return true, nil
	}
	m.ephemeralRefused.WithLabelValues(reason).Inc()
	if flood && c.close(CloseEphemeralFlood, "typing frames over the budget") {
		m.floodCloses.Inc()
	}
	return false, nil
}

// truncated is s cut to 64 bytes, to be named in an answer.
func truncated(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
