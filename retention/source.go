package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// Source holds the policy Set in force and, when it was read from a file,
// rereads the file on Reload. It is safe for concurrent use: readers take
// the Set of the moment and keep it for one unit of work.
type Source struct {
	path string
	cur  atomic.Pointer[Set]

	mu      sync.Mutex // one reload at a time; guards stamp and ledger
	stamp   fileStamp
	ledger  Ledger
	data    []byte // the bytes of the file in force
	reloads atomic.Int64
	refused atomic.Int64
	// refusedBy counts refused files by reason (Refusal.Reason).
	refusedBy sync.Map // string -> *atomic.Int64
	// now is the clock allow_shrink is judged by (time.Now when nil).
	now func() time.Time
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// Fixed is a Source that always answers set.
func Fixed(set *Set) *Source {
	s := &Source{}
	s.cur.Store(set)
	return s
}

// Load reads and validates the policy file at path; a bad file is refused
// with the line to blame.
func Load(path string) (*Source, error) {
	s := &Source{path: path}
	if _, err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Current is the Set in force.
func (s *Source) Current() *Set { return s.cur.Load() }

// Path is the file the Source reads ("" for a fixed Set).
func (s *Source) Path() string { return s.path }

// Reloads counts the Sets put in force by Reload.
func (s *Source) Reloads() int64 { return s.reloads.Load() }

// Refused counts the files Reload refused.
func (s *Source) Refused() int64 { return s.refused.Load() }

// RefusedFor counts the files Reload refused for reason (Refusal.Reason).
func (s *Source) RefusedFor(reason string) int64 {
	if v, ok := s.refusedBy.Load(reason); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

func (s *Source) refuse(err error) error {
	s.refused.Add(1)
	reason := ReasonInvalid
	var r *Refusal
	switch {
	case errors.As(err, &r):
		reason = r.Reason
	case errors.Is(err, ErrEmpty):
		reason = ReasonEmpty
	}
	v, _ := s.refusedBy.LoadOrStore(reason, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
	return err
}

// Reload rereads the file. A file that fails validation, is empty or
// truncated, or shortens what the policy in force keeps without the
// operator's confirmation (see Admit) changes nothing: the Set in force
// stays, and the error says why.
func (s *Source) Reload() (*Set, error) {
	if s.path == "" {
		return s.Current(), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := os.Stat(s.path)
	if err != nil {
		return nil, fmt.Errorf("retention policy: %w", err)
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		return nil, fmt.Errorf("retention policy: %w", err)
	}
	// The stamp is of the file last looked at, refused or not: a refused
	// file is not read again until it changes (or SIGHUP).
	s.stamp = fileStamp{mod: st.ModTime(), size: st.Size()}
	set, err := Parse(s.path, data)
	if err != nil {
		return nil, s.refuse(err)
	}
	if err := s.admit(set, data); err != nil {
		return nil, s.refuse(err)
	}
	s.data = data
	s.cur.Store(set)
	s.reloads.Add(1)
	return set, nil
}

// look returns the file's stamp and whether it differs from the one
// last read.
func (s *Source) look() (fileStamp, bool) {
	st, err := os.Stat(s.path)
	if err != nil {
		return fileStamp{}, false
	}
	now := fileStamp{mod: st.ModTime(), size: st.Size()}
	s.mu.Lock()
	defer s.mu.Unlock()
	return now, now != s.stamp
}

// Watch reloads the file on SIGHUP and when it changed and then held still
// for one poll (so a file being written is not read half-way; writing it
// elsewhere and renaming it into place is safer still), until ctx ends. A
// refused file is logged and the Set in force stays.
func (s *Source) Watch(ctx context.Context, poll time.Duration, log *slog.Logger) {
	if s.path == "" {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	t := time.NewTicker(poll)
	defer t.Stop()
	var pending fileStamp
	for {
		why := ""
		select {
		case <-ctx.Done():
			return
		case <-hup:
			why = "SIGHUP"
		case <-t.C:
			st, diff := s.look()
			if !diff || st != pending {
				pending = st
				continue
			}
			why = "file changed"
		}
		pending = fileStamp{}
		if set, err := s.Reload(); err != nil {
			log.Warn("retention policy refused; the previous one stays in force", "why", why, "err", err)
		} else {
			log.Info("retention policy reloaded", "why", why, "file", s.path, "policies", len(set.Policies))
		}
	}
}

// FromRetention is the Set of the settings the expiry worker had before
// policy files: a default window, windows per conversation type and per
// kind, and one history retention.
func FromRetention(r redisstore.Retention, history time.Duration) *Set {
	set := &Set{Source: "built-in settings", DefaultInbox: DefaultInbox, DefaultHistory: History{Keep: DefaultHistory}}
	if r.Window > 0 {
		set.DefaultInbox = r.Window
	}
	if history > 0 {
		set.DefaultHistory = History{Keep: history}
	}
	for _, t := range []schemas.ConvType{schemas.ConvType_CONV_TYPE_DIRECT, schemas.ConvType_CONV_TYPE_GROUP} {
		if w, ok := r.ConvTypes[t]; ok {
			set.Policies = append(set.Policies, Policy{Name: convTypeNames[t], Match: Match{ConvType: t}, Inbox: &w})
		}
	}
	for _, k := range []schemas.Kind{schemas.Kind_KIND_MESSAGE, schemas.Kind_KIND_MEMBER_JOIN, schemas.Kind_KIND_MEMBER_LEAVE} {
		if w, ok := r.Kinds[k]; ok {
			set.Policies = append(set.Policies, Policy{Name: kindNames[k], Match: Match{Kind: k}, Inbox: &w})
		}
	}
	for ct, w := range r.ContentTypes {
		set.Policies = append(set.Policies, Policy{Name: ct, Match: Match{ContentType: ct}, Inbox: &w})
	}
	return set
}
