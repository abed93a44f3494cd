package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/offlinebox/offlinebox/schemas"
)

// Retention defaults.
const (
	// DefaultRetentionWindow is how long timeline entries and mention
	// references are kept, counted from their write time.
	DefaultRetentionWindow = 30 * 24 * time.Hour
	// MinRetention is the least any entry is kept, whatever is configured:
	// a device that acked something may still need it for a few days on
	// another device, and an operator typo must not empty the inboxes.
	MinRetention = 72 * time.Hour
)

// Retention says how long timeline entries are kept, by write time.
//
// The window of an entry is ContentTypes[content type] when set, else
// Kinds[kind] when set, else ConvTypes[type] when set, else Window; a window
// below MinRetention counts as MinRetention. A retention policy file
// (package retention) compiles to one Retention per conversation.
//
// The timeline is contiguous (invariant "no holes"), so entries leave it
// only from its head, in seq order: the head goes while it is past its own
// window. A kind window shorter than its conversation's therefore takes
// effect once everything before the entry has gone; a longer one keeps the
// entries behind it until it has passed. Nothing is ever removed inside its
// own window.
type Retention struct {
	// Window is the default (DefaultRetentionWindow when zero).
	Window time.Duration
	// ConvTypes overrides Window per conversation type.
	ConvTypes map[schemas.ConvType]time.Duration
	// Kinds overrides the conversation's window per message kind.
	Kinds map[schemas.Kind]time.Duration
	// ContentTypes overrides the window per content type (exact match);
	// it comes before Kinds.
	ContentTypes map[string]time.Duration
}

func (r Retention) withDefaults() Retention {
	if r.Window == 0 {
		r.Window = DefaultRetentionWindow
	}
	return r
}

// Validate reports the first window that is negative or names an unknown
// conversation type or kind.
func (r Retention) Validate() error {
	if r.Window < 0 {
		return fmt.Errorf("retention: Window %s is negative", r.Window)
	}
	for t, w := range r.ConvTypes {
		if _, ok := schemas.ConvType_name[int32(t)]; !ok || t == schemas.ConvType_CONV_TYPE_UNSPECIFIED {
			return fmt.Errorf("retention: ConvTypes names unknown conversation type %d", t)
		}
		if w <= 0 {
			return fmt.Errorf("retention: ConvTypes[%s] %s is not positive", t, w)
		}
	}
	for k, w := range r.Kinds {
		if _, ok := schemas.Kind_name[int32(k)]; !ok {
			return fmt.Errorf("retention: Kinds names unknown kind %d", k)
		}
		if w <= 0 {
			return fmt.Errorf("retention: Kinds[%s] %s is not positive", k, w)
		}
	}
	for ct, w := range r.ContentTypes {
		if w <= 0 {
			return fmt.Errorf("retention: ContentTypes[%q] %s is not positive", ct, w)
		}
	}
	return nil
}

// TypeWindow is the window of a conversation type's ordinary messages
// (what mention references are kept by).
func (r Retention) TypeWindow(t schemas.ConvType) time.Duration {
	r = r.withDefaults()
	w := r.Window
	if tw, ok := r.ConvTypes[t]; ok {
		w = tw
	}
	return max(w, MinRetention)
}

// EntryWindow is the window of one entry of a conversation of type t.
func (r Retention) EntryWindow(t schemas.ConvType, k schemas.Kind) time.Duration {
	return r.MessageWindow(t, k, "")
}

// MessageWindow is the window of one entry of kind k and content type ct
// in a conversation of type t.
func (r Retention) MessageWindow(t schemas.ConvType, k schemas.Kind, ct string) time.Duration {
	if cw, ok := r.ContentTypes[ct]; ok && ct != "" {
		return max(cw, MinRetention)
	}
	if kw, ok := r.Kinds[k]; ok {
		return max(kw, MinRetention)
	}
	return r.TypeWindow(t)
}

// Expired reports whether an entry written at writeMS is past its window at
// now.
func (r Retention) Expired(t schemas.ConvType, k schemas.Kind, writeMS int64, now time.Time) bool {
	return r.MessageExpired(t, k, "", writeMS, now)
}

// MessageExpired is Expired for an entry of content type ct.
func (r Retention) MessageExpired(t schemas.ConvType, k schemas.Kind, ct string, writeMS int64, now time.Time) bool {
	return writeMS < now.Add(-r.MessageWindow(t, k, ct)).UnixMilli()
}

// shortestWindow is the least window any entry of a conversation of type t
// can have: an entry written at or after now minus it is kept whatever its
// kind.
func (r Retention) shortestWindow(t schemas.ConvType) time.Duration {
	w := r.TypeWindow(t)
	for _, kw := range r.Kinds {
		w = min(w, max(kw, MinRetention))
	}
	for _, cw := range r.ContentTypes {
		w = min(w, max(cw, MinRetention))
	}
	return w
}

// LongestWindow is the greatest window of any conversation type or kind:
// whatever is older is gone from every timeline.
func (r Retention) LongestWindow() time.Duration {
	r = r.withDefaults()
	w := max(r.Window, MinRetention)
	for _, tw := range r.ConvTypes {
		w = max(w, tw)
	}
	for _, kw := range r.Kinds {
		w = max(w, kw)
	}
	for _, cw := range r.ContentTypes {
		w = max(w, cw)
	}
	return w
}

// ConvRetention is what a conversation's retention is chosen by.
type ConvRetention struct {
	Conv string
	Type schemas.ConvType
	// Tag is the conversation's tag ("" when none was set).
	Tag string
}

// RetentionFor chooses the Retention of one conversation.
type RetentionFor func(ConvRetention) Retention

// ConvRetentionInfo reads what a conversation's retention is chosen by;
// ok is false when Redis holds no such conversation.
func (s *Store) ConvRetentionInfo(ctx context.Context, conv string) (info ConvRetention, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	vals, err := s.rdb.HMGet(ctx, s.keys.ConvMeta(conv), MetaEpoch, MetaType, MetaTag).Result()
	if err != nil {
		return info, false, fmt.Errorf("read retention fields of %s: %w", conv, err)
	}
	info = ConvRetention{Conv: conv, Type: ConvTypeOfCode(hashString(vals[1])), Tag: hashString(vals[2])}
	return info, hashString(vals[0]) != "", nil
}
