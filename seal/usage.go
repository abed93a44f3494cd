package seal

import (
	"context"
	"sort"
)

// KeyUse is how many data keys one master key wraps, in the registry
// (Redis) and in the durable copy (ClickHouse).
type KeyUse struct {
	ID              string
	InRing, Newest  bool
	Stored, Durable int
}

// unreadable is the id KeyUse gives data keys whose stored form names no
// master key.
const unreadable = "(unreadable)"

// Usage counts, per master key, the data keys it wraps: every key of the
// ring (in its order, newest last), then ids the stores name that the
// ring lacks. durable may be nil.
func Usage(ctx context.Context, ring KeyRing, ids []string, reg Registry, durable DurableKeys) ([]KeyUse, error) {
	byID := map[string]*KeyUse{}
	var out []*KeyUse
	get := func(id string) *KeyUse {
		if u, ok := byID[id]; ok {
			return u
		}
		u := &KeyUse{ID: id}
		byID[id] = u
		out = append(out, u)
		return u
	}
	for _, id := range ids {
		u := get(id)
		u.InRing, u.Newest = true, id == ring.Newest()
	}
	ringLen := len(out)
	count := func(durableCopy bool) func(conv, stored string) error {
		return func(_, stored string) error {
			id := unreadable
			if w, err := ParseWrapped(stored); err == nil {
				id = w.MasterID
			}
			if u := get(id); durableCopy {
				u.Durable++
			} else {
				u.Stored++
			}
			return nil
		}
	}
	if err := reg.EachDataKey(ctx, count(false)); err != nil {
		return nil, err
	}
	if durable != nil {
		if err := durable.EachDataKey(ctx, count(true)); err != nil {
			return nil, err
		}
	}
	extra := out[ringLen:]
	sort.Slice(extra, func(i, j int) bool { return extra[i].ID < extra[j].ID })
	res := make([]KeyUse, len(out))
	for i, u := range out {
		res[i] = *u
	}
	return res, nil
}
