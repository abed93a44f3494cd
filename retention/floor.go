package retention

import (
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// Floored is the policy in force held up by the one last confirmed: every
// kept time is the longer of the two, so a sweep run under it never
// deletes what the confirmed policy keeps, whatever the process was given.
// A nil Floor is Set alone.
type Floored struct {
	Set   *Set
	Floor *Set
}

// Floor is set held up by the confirmed policy c (none when ok is false).
// A confirmed policy that does not parse is an error: the sweep must not
// run without its floor.
func Floor(set *Set, c redisstore.ConfirmedRetention, ok bool) (Floored, error) {
	if !ok {
		return Floored{Set: set}, nil
	}
	f, err := Parse(c.Source, c.Policy)
	if err != nil {
		return Floored{}, err
	}
	return Floored{Set: set, Floor: f}, nil
}

// Resolve is Set's decision with each kept time raised to the floor's.
func (f Floored) Resolve(sub Subject) Decision {
	d := f.Set.Resolve(sub)
	if f.Floor == nil {
		return d
	}
	o := f.Floor.Resolve(sub)
	if o.Inbox > d.Inbox {
		d.Inbox, d.InboxFrom = o.Inbox, "the confirmed policy"
	}
	if o.Hold > d.Hold {
		d.Hold, d.HoldFrom = o.Hold, "the confirmed policy"
	}
	d.Kept = max(d.Kept, o.Kept)
	return d
}

// Inbox is the longer of the two Sets' windows for every entry.
func (f Floored) Inbox(c redisstore.ConvRetention) redisstore.Retention {
	a := f.Set.Inbox(c)
	if f.Floor == nil {
		return a
	}
	b := f.Floor.Inbox(c)
	out := redisstore.Retention{Window: max(a.Window, b.Window)}
	for _, m := range []map[schemas.Kind]time.Duration{a.Kinds, b.Kinds} {
		for k := range m {
			if out.Kinds == nil {
				out.Kinds = map[schemas.Kind]time.Duration{}
			}
			out.Kinds[k] = max(a.MessageWindow(c.Type, k, ""), b.MessageWindow(c.Type, k, ""))
		}
	}
	for _, m := range []map[string]time.Duration{a.ContentTypes, b.ContentTypes} {
		for ct := range m {
			if out.ContentTypes == nil {
				out.ContentTypes = map[string]time.Duration{}
			}
			// A content type one Set does not name takes its kind's window
			// there: the longest of them is kept.
			out.ContentTypes[ct] = max(longestFor(a, c.Type, ct), longestFor(b, c.Type, ct))
		}
	}
	return out
}

// longestFor is the longest window r gives an entry of content type ct,
// whatever its kind.
func longestFor(r redisstore.Retention, t schemas.ConvType, ct string) time.Duration {
	w := r.MessageWindow(t, schemas.Kind_KIND_UNSPECIFIED, ct)
	for k := range r.Kinds {
		w = max(w, r.MessageWindow(t, k, ct))
	}
	return w
}

// LongestInboxWindows is the longer of the two Sets' per type.
func (f Floored) LongestInboxWindows() redisstore.Retention {
	a := f.Set.LongestInboxWindows()
	if f.Floor == nil {
		return a
	}
	b := f.Floor.LongestInboxWindows()
	a.Window = max(a.Window, b.Window)
	for t, w := range b.ConvTypes {
		a.ConvTypes[t] = max(a.ConvTypes[t], w)
	}
	return a
}

// LongestKept is the longer of the two Sets'.
func (f Floored) LongestKept() time.Duration {
	if f.Floor == nil {
		return f.Set.LongestKept()
	}
	return max(f.Set.LongestKept(), f.Floor.LongestKept())
}

// ShortestKept bounds every floored kept time from below: each is at
// least either Set's own.
func (f Floored) ShortestKept() time.Duration {
	if f.Floor == nil {
		return f.Set.ShortestKept()
	}
	return max(f.Set.ShortestKept(), f.Floor.ShortestKept())
}
