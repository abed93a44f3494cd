package retention

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// Defaults of a policy file that does not set them.
const (
	DefaultInbox   = redisstore.DefaultRetentionWindow
	DefaultHistory = 365 * 24 * time.Hour
)

// Match selects messages; an empty field matches any value. At most one of
// Conv and ConvPrefix, and at most one of ContentType and Kind, is set.
type Match struct {
	Conv        string
	ConvPrefix  string
	Tag         string
	ConvType    schemas.ConvType
	ContentType string
	Kind        schemas.Kind
}

// Matches reports whether every selector of m holds for sub.
func (m Match) Matches(sub Subject) bool {
	return (m.Conv == "" || m.Conv == sub.Conv) &&
		(m.ConvPrefix == "" || strings.HasPrefix(sub.Conv, m.ConvPrefix)) &&
		(m.Tag == "" || m.Tag == sub.Tag) &&
		(m.ConvType == schemas.ConvType_CONV_TYPE_UNSPECIFIED || m.ConvType == sub.ConvType) &&
		(m.ContentType == "" || m.ContentType == sub.ContentType) &&
		(m.Kind == schemas.Kind_KIND_UNSPECIFIED || m.Kind == sub.Kind)
}

// messageLevel: 2 content type, 1 kind, 0 the whole conversation.
func (m Match) messageLevel() int {
	switch {
	case m.ContentType != "":
		return 2
	case m.Kind != schemas.Kind_KIND_UNSPECIFIED:
		return 1
	}
	return 0
}

// specificity compares two matches by the order of the package doc:
// positive when m is more specific than o.
func (m Match) specificity(o Match) int {
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	return cmp.Or(
		cmp.Compare(m.messageLevel(), o.messageLevel()),
		cmp.Compare(b(m.Conv != ""), b(o.Conv != "")),
		cmp.Compare(len(m.ConvPrefix), len(o.ConvPrefix)),
		cmp.Compare(b(m.Tag != ""), b(o.Tag != "")),
		cmp.Compare(b(m.ConvType != 0), b(o.ConvType != 0)),
	)
}

// String lists the selectors as they are written in the file.
func (m Match) String() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("conv", m.Conv)
	add("conv_prefix", m.ConvPrefix)
	add("tag", m.Tag)
	if m.ConvType != 0 {
		add("conv_type", convTypeNames[m.ConvType])
	}
	add("content_type", m.ContentType)
	if m.Kind != 0 {
		add("kind", kindNames[m.Kind])
	}
	return strings.Join(parts, " ")
}

// History is a history retention: a duration, or None (burn on expiry).
type History struct {
	None bool
	Keep time.Duration
}

func (h History) String() string {
	if h.None {
		return "none"
	}
	return FormatDuration(h.Keep)
}

// Policy is one entry of a policy file. A nil setting is not set by it.
type Policy struct {
	Name      string
	Line      int
	Match     Match
	Inbox     *time.Duration
	History   *History
	AuditHold time.Duration
}

// Set is a validated policy file.
type Set struct {
	// Source names where it was read from (a path), for explanations.
	Source string
	// DefaultInbox and DefaultHistory apply where no policy sets them.
	DefaultInbox   time.Duration
	DefaultHistory History
	// Policies in file order.
	Policies []Policy
	// AllowShrink is the day of the file's allow_shrink (zero: none): the
	// operator's confirmation that the file may shorten what is kept
	// (ShrinkAllowed).
	AllowShrink time.Time
	// Digest is the SHA-256 of the file's bytes (hex; "" for a Set not read
	// from a file): what `retention apply` confirms.
	Digest string
}

// ShrinkAllowed reports whether the file's allow_shrink confirms a shrink
// at now: its day is today (UTC) or one day either side, so a date left
// in the file confirms nothing a week later.
func (s *Set) ShrinkAllowed(now time.Time) bool {
	if s.AllowShrink.IsZero() {
		return false
	}
	today := now.UTC().Truncate(24 * time.Hour)
	d := s.AllowShrink.Sub(today)
	return d >= -24*time.Hour && d <= 24*time.Hour
}

// Subject is one message as retention sees it: its conversation's id, tag
// and type, and its own kind and content type.
type Subject struct {
	Conv        string
	Tag         string
	ConvType    schemas.ConvType
	Kind        schemas.Kind
	ContentType string
}

// Decision is what applies to one message, and where each part comes from
// (a policy name, or "defaults").
type Decision struct {
	Inbox       time.Duration
	InboxFrom   string
	History     History
	HistoryFrom string
	// Hold is the longest audit hold of the matching policies (0: none).
	Hold     time.Duration
	HoldFrom string
	// Kept is how long the message stays in history, from its write time:
	// History (the inbox window when none), raised to Hold.
	Kept time.Duration
	// Matching lists the policies that match, most specific first.
	Matching []*Policy
}

// Resolve decides what applies to one message.
func (s *Set) Resolve(sub Subject) Decision {
	d := Decision{
		Inbox: s.DefaultInbox, InboxFrom: "defaults",
		History: s.DefaultHistory, HistoryFrom: "defaults",
	}
	for i := range s.Policies {
		if s.Policies[i].Match.Matches(sub) {
			d.Matching = append(d.Matching, &s.Policies[i])
		}
	}
	slices.SortStableFunc(d.Matching, func(a, b *Policy) int { return b.Match.specificity(a.Match) })
	inboxSet, historySet := false, false
	for _, p := range d.Matching {
		if p.Inbox != nil && !inboxSet {
			d.Inbox, d.InboxFrom, inboxSet = *p.Inbox, p.Name, true
		}
		if p.History != nil && !historySet {
			d.History, d.HistoryFrom, historySet = *p.History, p.Name, true
		}
		if p.AuditHold > d.Hold {
			d.Hold, d.HoldFrom = p.AuditHold, p.Name
		}
	}
	d.Inbox = max(d.Inbox, redisstore.MinRetention)
	d.Kept = d.History.Keep
	if d.History.None {
		d.Kept = d.Inbox
	}
	d.Kept = max(d.Kept, d.Hold)
	return d
}

// Inbox compiles the Redis inbox windows of one conversation: the window
// of its ordinary messages and of every kind and content type a policy
// names. Lookups in redisstore.Retention (content type, then kind, then the
// conversation) follow the same order as Resolve, so the two agree.
func (s *Set) Inbox(c redisstore.ConvRetention) redisstore.Retention {
	sub := Subject{Conv: c.Conv, Tag: c.Tag, ConvType: c.Type}
	r := redisstore.Retention{Window: s.Resolve(sub).Inbox}
	for _, p := range s.Policies {
		if p.Inbox == nil {
			continue
		}
		switch m := p.Match; {
		case m.ContentType != "":
			if _, done := r.ContentTypes[m.ContentType]; done {
				continue
			}
			if d := s.Resolve(Subject{Conv: c.Conv, Tag: c.Tag, ConvType: c.Type, ContentType: m.ContentType}); s.setsInboxAtLevel(d, 2) {
				if r.ContentTypes == nil {
					r.ContentTypes = map[string]time.Duration{}
				}
				r.ContentTypes[m.ContentType] = d.Inbox
			}
		case m.Kind != schemas.Kind_KIND_UNSPECIFIED:
			if _, done := r.Kinds[m.Kind]; done {
				continue
			}
			if d := s.Resolve(Subject{Conv: c.Conv, Tag: c.Tag, ConvType: c.Type, Kind: m.Kind}); s.setsInboxAtLevel(d, 1) {
				if r.Kinds == nil {
					r.Kinds = map[schemas.Kind]time.Duration{}
				}
				r.Kinds[m.Kind] = d.Inbox
			}
		}
	}
	return r
}

// setsInboxAtLevel reports whether d's inbox window comes from a policy of
// the given message level (so it belongs in that level's map).
func (s *Set) setsInboxAtLevel(d Decision, level int) bool {
	for _, p := range d.Matching {
		if p.Name == d.InboxFrom {
			return p.Match.messageLevel() == level
		}
	}
	return false
}

// LongestInboxWindows is, per conversation type, the longest inbox window
// any policy can give it. Mention references are trimmed by it, so a
// reference never leaves before the message it points at, and a rebuild
// restores by it (expiry then trims each conversation to its own policy).
func (s *Set) LongestInboxWindows() redisstore.Retention {
	r := redisstore.Retention{Window: s.DefaultInbox, ConvTypes: map[schemas.ConvType]time.Duration{}}
	for _, t := range []schemas.ConvType{schemas.ConvType_CONV_TYPE_DIRECT, schemas.ConvType_CONV_TYPE_GROUP} {
		w := s.DefaultInbox
		for _, p := range s.Policies {
			if p.Inbox != nil && (p.Match.ConvType == 0 || p.Match.ConvType == t) {
				w = max(w, *p.Inbox)
			}
		}
		r.ConvTypes[t] = max(w, redisstore.MinRetention)
	}
	return r
}

// LongestKept bounds from above how long any message stays in history:
// older months can be dropped whole.
func (s *Set) LongestKept() time.Duration {
	w := max(s.DefaultInbox, s.DefaultHistory.Keep)
	for _, p := range s.Policies {
		if p.Inbox != nil {
			w = max(w, *p.Inbox)
		}
		if p.History != nil {
			w = max(w, p.History.Keep)
		}
		w = max(w, p.AuditHold)
	}
	return max(w, redisstore.MinRetention)
}

// ShortestKept bounds from below how long any message stays in history:
// younger rows need no look.
func (s *Set) ShortestKept() time.Duration {
	// Kept is a history retention, or an inbox window (history: none),
	// raised by holds: the least of all of those is below every Kept.
	w := max(s.DefaultInbox, redisstore.MinRetention)
	if !s.DefaultHistory.None {
		w = min(w, s.DefaultHistory.Keep)
	}
	for _, p := range s.Policies {
		if p.Inbox != nil {
			w = min(w, max(*p.Inbox, redisstore.MinRetention))
		}
		if p.History != nil && !p.History.None {
			w = min(w, p.History.Keep)
		}
	}
	return w
}

// Describe names a policy with its line, for messages.
func (p *Policy) Describe() string {
	if p.Line == 0 {
		return fmt.Sprintf("%q (built in: %s)", p.Name, p.Match)
	}
	return fmt.Sprintf("%q (line %d: %s)", p.Name, p.Line, p.Match)
}
