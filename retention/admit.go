package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
)

// Reasons a policy file is refused (the reason label of
// offlinebox_retention_reload_refused_total).
const (
	ReasonEmpty   = "empty"   // no defaults and no policies, or a key holding nothing
	ReasonInvalid = "invalid" // fails validation (the error names the line)
	ReasonShrink  = "shrink"  // shortens a kept time or drops a hold, unconfirmed
	ReasonLedger  = "ledger"  // the confirmed policy could not be read or written
)

// ledgerTimeout bounds one read or write of the Ledger.
const ledgerTimeout = 5 * time.Second

// Ledger keeps the policy last confirmed, durably and beside the data
// (redisstore.Store: a Redis key): reloads are judged against it, and the
// expiry sweep never deletes below it (Floor).
type Ledger interface {
	ConfirmedRetention(ctx context.Context) (redisstore.ConfirmedRetention, bool, error)
	ConfirmRetention(ctx context.Context, c redisstore.ConfirmedRetention) error
}

// Refusal is a policy file refused for a reason other than its syntax.
type Refusal struct {
	File   string
	Reason string
	Change Change
	Err    error
}

func (r *Refusal) Error() string {
	switch r.Reason {
	case ReasonShrink:
		return fmt.Sprintf("retention policy %s shortens what the policy in force keeps (%s): confirm with allow_shrink: %s in the file or `offlinebox retention apply -allow-shrink %s`",
			r.File, r.Change.Summary(3), time.Now().UTC().Format(time.DateOnly), r.File)
	case ReasonLedger:
		return fmt.Sprintf("retention policy %s: the confirmed policy: %v", r.File, r.Err)
	}
	return fmt.Sprintf("retention policy %s refused: %s", r.File, r.Reason)
}

func (r *Refusal) Unwrap() error { return r.Err }

// Attach makes the Source judge every Set against the policy the ledger
// confirmed, and confirms the Set in force now: the first confirmation
// when the ledger holds none, else the Set must not shorten the confirmed
// one unless confirmed (Admit), or Attach refuses it and the process
// should not start with it.
func (s *Source) Attach(ctx context.Context, l Ledger) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ledger = l
	if err := s.admitCtx(ctx, s.Current(), s.data, "start"); err != nil {
		s.ledger = nil
		return s.refuse(err)
	}
	return nil
}

func (s *Source) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

func (s *Source) admit(set *Set, data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*ledgerTimeout)
	defer cancel()
	return s.admitCtx(ctx, set, data, "reload")
}

// admitCtx decides whether set may replace the policy in force (the one
// the ledger confirmed, else the Source's own): when it shortens nothing,
// when its allow_shrink is dated today (±1 day), or when the ledger
// confirmed this very file (`retention apply -allow-shrink`). An admitted
// Set the ledger does not hold yet is confirmed there.
func (s *Source) admitCtx(ctx context.Context, set *Set, data []byte, how string) error {
	base := s.Current()
	var conf redisstore.ConfirmedRetention
	if s.ledger != nil {
		c, ok, err := s.readLedger(ctx)
		if err != nil {
			return &Refusal{File: s.path, Reason: ReasonLedger, Err: err}
		}
		if ok {
			conf = c
			if b, err := Parse(c.Source, c.Policy); err == nil {
				base = b
			}
		}
	}
	if base != nil && base != set && conf.Digest != set.Digest {
		if ch := Compare(base, set); ch.Shortens() {
			if !set.ShrinkAllowed(s.clock()) {
				return &Refusal{File: s.path, Reason: ReasonShrink, Change: ch}
			}
			how = "allow_shrink"
		}
	}
	if s.ledger == nil || conf.Digest == set.Digest || set.Digest == "" {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, ledgerTimeout)
	defer cancel()
	err := s.ledger.ConfirmRetention(wctx, redisstore.ConfirmedRetention{
		Policy: data, Digest: set.Digest, Source: s.path, How: how, At: s.clock()})
	if err != nil {
		return &Refusal{File: s.path, Reason: ReasonLedger, Err: err}
	}
	return nil
}

func (s *Source) readLedger(ctx context.Context) (redisstore.ConfirmedRetention, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, ledgerTimeout)
	defer cancel()
	return s.ledger.ConfirmedRetention(ctx)
}
