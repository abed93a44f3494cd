package api

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/redisstore"
)

// Revocation: `offlinebox revoke` or POST /v1/devices/revoke records, per
// user, the time before which the tokens of the user (or of one device)
// are refused (redisstore.Revoke), and adds it to a short log every node
// reads each RevocationPoll. From the log a node learns of every
// revocation within a poll: it closes the revoked connections it holds
// and keeps the revocations seen since it began watching (since). A token
// issued after since can only be covered by one of those, so checking it
// costs a map lookup and no store read; only a token issued before a node
// began watching needs the user's record, read once and kept for
// revokedCacheTTL (bounded).

// What a token's check answers besides the keyring's errors (edge's, so
// the live channel tells them apart too).
var (
	errRevoked           = edge.ErrRevoked
	errRevocationsUnread = edge.ErrRevocationsUnread
)

// Bounds of what a node keeps of revocations.
const (
	revocationPoll    = time.Second
	revocationOverlap = 5 * time.Second // read again on each poll: writers' clocks and late log writes
	revocationPage    = 512
	maxRecentRevoked  = 100_000
	maxRevokedCache   = 16_384
	revokedCacheTTL   = 10 * time.Second
)

type revocations struct {
	store *redisstore.Store
	log   *slog.Logger
	// onRevoked is told of each revocation the poll reads (the hub closes
	// the connections it covers).
	onRevoked func(redisstore.RevocationEntry)

	// mu guards everything below.
	mu sync.Mutex
	// since: every revocation recorded after it is in recent (zero: not
	// watching yet).
	since  time.Time
	cursor time.Time // the poll reads the log from cursor - revocationOverlap
	lastOK time.Time // the last poll that read the log to its end
	recent map[string]redisstore.Revocation
	cache  map[string]cachedRevocation

	stopOnce sync.Once
	stop     context.CancelFunc
	done     chan struct{}
}

type cachedRevocation struct {
	rec redisstore.Revocation
	at  time.Time
}

func newRevocations(store *redisstore.Store, log *slog.Logger) *revocations {
	return &revocations{store: store, log: log, recent: map[string]redisstore.Revocation{},
		cache: map[string]cachedRevocation{}}
}

// firstPollWait bounds the first read of the log, made before the node
// serves: once it read, a token issued since costs no store read.
const firstPollWait = 2 * time.Second

// run reads the log once (for at most firstPollWait), then polls it
// until stopped.
func (r *revocations) run() {
	first, cancelFirst := context.WithTimeout(context.Background(), firstPollWait)
	firstErr := r.poll(first, time.Now())
	cancelFirst()
	ctx, cancel := context.WithCancel(context.Background())
	r.stop, r.done = cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		t := time.NewTicker(revocationPoll)
		defer t.Stop()
		failing := false
		if firstErr == nil {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		for {
			err := r.poll(ctx, time.Now())
			switch {
			case err != nil && !failing && ctx.Err() == nil:
				r.log.Warn("read the revocation log", "err", err)
				failing = true
			case err == nil:
				failing = false
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

func (r *revocations) close() {
	r.stopOnce.Do(func() {
		if r.stop != nil {
			r.stop()
			<-r.done
		}
	})
}

// poll reads the log from the cursor to its end and takes in what it
// holds. A node that could not read it for longer than the log keeps
// what it missed starts watching anew: until then every token is checked
// against its user's record.
func (r *revocations) poll(ctx context.Context, now time.Time) error {
	r.mu.Lock()
	from := r.cursor.Add(-revocationOverlap)
	if r.since.IsZero() || now.Sub(r.lastOK) > redisstore.RevocationLogKeep/2 {
		r.since, from = time.Time{}, now.Add(-redisstore.RevocationLogKeep)
		clear(r.recent)
	}
	r.mu.Unlock()
	var seen []redisstore.RevocationEntry
	for page := 0; ; page++ {
		entries, err := r.store.RevocationsSince(ctx, from, revocationPage)
		if err != nil {
			return err
		}
		seen = append(seen, entries...)
		if len(entries) < revocationPage || page >= 20 {
			break
		}
		from = entries[len(entries)-1].At
	}
	r.mu.Lock()
	if r.since.IsZero() {
		r.since = now
	}
	for _, e := range seen {
		rec := r.recent[e.User]
		rec.Merge(e.Device, e.At)
		r.recent[e.User] = rec
		if e.At.After(r.cursor) {
			r.cursor = e.At
		}
	}
	if r.cursor.IsZero() || now.Sub(r.cursor) > revocationOverlap {
		r.cursor = now.Add(-revocationOverlap)
	}
	if len(r.recent) > maxRecentRevoked {
		r.since = now // older tokens are checked against their records
		clear(r.recent)
	}
	r.lastOK = now
	r.mu.Unlock()
	if r.onRevoked != nil {
		for _, e := range seen {
			r.onRevoked(e)
		}
	}
	return nil
}

// known answers from what the node holds whether a token of id, used
// for device, was revoked; known is false when only the user's record
// can tell.
func (r *revocations) known(id auth.Identity, device string) (revoked, known bool) {
	r.mu.Lock()
	rec, ok := r.recent[id.User]
	since := r.since
	c, cached := r.cache[id.User]
	r.mu.Unlock()
	switch {
	case ok && rec.Covers(device, id.Issued):
		return true, true
	case !since.IsZero() && !id.Issued.Before(since):
		return false, true
	case cached && time.Since(c.at) < revokedCacheTTL:
		return c.rec.Covers(device, id.Issued), true
	}
	return false, false
}

// revoked reports whether a token of id, used for device, was revoked.
func (r *revocations) revoked(ctx context.Context, id auth.Identity, device string) (bool, error) {
	if revoked, known := r.known(id, device); known {
		return revoked, nil
	}
	got, err := r.store.RevokedOf(ctx, id.User)
	if err != nil {
		return false, fmt.Errorf("%w: %w", errRevocationsUnread, err)
	}
	r.mu.Lock()
	if len(r.cache) >= maxRevokedCache {
		clear(r.cache)
	}
	r.cache[id.User] = cachedRevocation{rec: got, at: time.Now()}
	r.mu.Unlock()
	return got.Covers(device, id.Issued), nil
}

// verifyToken checks a bearer token: its signature and times, then that
// it was not revoked (errRevoked).
func (s *Server) verifyToken(ctx context.Context, tok string) (auth.Identity, error) {
	id, err := s.keyring.Verify(tok)
	if err != nil {
		return id, err
	}
	revoked, err := s.revoked.revoked(ctx, id, id.Device)
	switch {
	case err != nil:
		return auth.Identity{}, err
	case revoked:
		return auth.Identity{}, errRevoked
	}
	return id, nil
}

// verifyTokenUnread checks a bearer token as verifyToken does, without a
// store read: check is nil when what the node holds answered, else the
// revocation read still owed, which the caller makes once it holds a
// slot among the requests worked on (a store read before admission
// would let a burst of requests reach a slow store unbounded).
func (s *Server) verifyTokenUnread(tok string) (id auth.Identity, check func(context.Context) error, err error) {
	if id, err = s.keyring.Verify(tok); err != nil {
		return id, nil, err
	}
	revoked, known := s.revoked.known(id, id.Device)
	switch {
	case known && revoked:
		return auth.Identity{}, nil, errRevoked
	case known:
		return id, nil, nil
	}
	return id, func(ctx context.Context) error { return s.revokedFor(ctx, id, id.Device) }, nil
}

// deviceRevoked checks a verified token not pinned to a device against
// the revocations of the device it is used for (errRevoked); a pinned
// one was checked against its own by verifyToken.
func (s *Server) deviceRevoked(ctx context.Context, id auth.Identity, device string) error {
	if id.Device != "" || device == "" {
		return nil
	}
	return s.revokedFor(ctx, id, device)
}

// revokedFor is errRevoked when id's user or device is revoked, or the
// error of reading the revocations.
func (s *Server) revokedFor(ctx context.Context, id auth.Identity, device string) error {
	revoked, err := s.revoked.revoked(ctx, id, device)
	switch {
	case err != nil:
		return err
	case revoked:
		return errRevoked
	}
	return nil
}

// tokenRefusal answers a token that did not verify (edge.TokenRefusal).
var tokenRefusal = edge.TokenRefusal
