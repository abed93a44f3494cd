package seal

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Registry is where the stored data keys and the master key canaries
// live (redisstore.Store is one).
type Registry interface {
	Canaries(ctx context.Context) (map[string]string, error)
	PutCanary(ctx context.Context, id, canary string) error
	DeleteCanary(ctx context.Context, id string) error
	EachDataKey(ctx context.Context, fn func(conv, wrapped string) error) error
	SwapDataKey(ctx context.Context, conv, old, new string) (bool, error)
}

// DurableKeys is the copy of the wrapped data keys outside Redis
// (chstore.Store is one): rekey rewraps it too, retire checks it too.
type DurableKeys interface {
	EachDataKey(ctx context.Context, fn func(conv, wrapped string) error) error
	PutDataKey(ctx context.Context, conv, wrapped string) error
}

// canaryConv is the associated data canaries are wrapped under; no
// conversation id can be empty.
const canaryConv = ""

// Check proves at start that ring is the ring the store's data keys were
// wrapped with: every master key that ever wrapped one (it left a canary)
// must be in the ring and open its canary. It then leaves a canary for
// the ring's newest key. A wrong or missing master key is an error.
func Check(ctx context.Context, ring KeyRing, reg Registry) error {
	cs, err := reg.Canaries(ctx)
	if err != nil {
		return err
	}
	for _, id := range sortedKeys(cs) {
		if !ring.Has(id) {
			return fmt.Errorf("master key %q wrapped data keys of this store but is not in the key ring: %w", id, ErrUnknownMasterKey)
		}
		w, err := ParseWrapped(cs[id])
		if err == nil && w.MasterID != id {
			err = errors.New("canary names another master key")
		}
		if err == nil {
			_, err = ring.Unwrap(ctx, canaryConv, w)
		}
		if err != nil {
			return fmt.Errorf("master key %q of the key ring is not the one that wrapped this store's data keys: %w", id, err)
		}
	}
	if _, ok := cs[ring.Newest()]; ok {
		return nil
	}
	w, err := ring.Wrap(ctx, canaryConv, make([]byte, 32))
	if err != nil {
		return fmt.Errorf("wrap canary: %w", err)
	}
	return reg.PutCanary(ctx, w.MasterID, w.String())
}

// CheckClear is Check for a start without a key ring: it fails when the
// store holds sealed bodies (a master key left a canary).
func CheckClear(ctx context.Context, reg Registry) error {
	cs, err := reg.Canaries(ctx)
	if err != nil {
		return err
	}
	if len(cs) > 0 {
		return fmt.Errorf("bodies of this store are sealed by master keys %s, but no key ring is configured", strings.Join(sortedKeys(cs), ", "))
	}
	return nil
}

// RekeyResult counts what Rekey did.
type RekeyResult struct {
	Rewrapped, Current int
	// DurableRewrapped counts the durable copy's keys written anew.
	DurableRewrapped int
}

// Rekey wraps every data key that is not yet wrapped by the ring's newest
// master key anew; messages are not touched (the data key is the same).
// A key changed meanwhile is read again.
//
// The durable copy (nil: none) is rewrapped after Redis: a key is written
// there anew when its newest row is not wrapped by the newest master key.
func Rekey(ctx context.Context, ring KeyRing, reg Registry, durable DurableKeys) (RekeyResult, error) {
	var res RekeyResult
	if err := Check(ctx, ring, reg); err != nil {
		return res, err
	}
	s := &Sealer{ring: ring}
	err := reg.EachDataKey(ctx, func(conv, stored string) error {
		nw, changed, err := s.Rewrap(ctx, conv, stored)
		if err != nil {
			return err
		}
		if !changed {
			res.Current++
			return nil
		}
		ok, err := reg.SwapDataKey(ctx, conv, stored, nw)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("data key of %s changed while it was rewrapped; run rekey again", conv)
		}
		res.Rewrapped++
		return nil
	})
	if err != nil || durable == nil {
		return res, err
	}
	err = durable.EachDataKey(ctx, func(conv, stored string) error {
		nw, changed, err := s.Rewrap(ctx, conv, stored)
		if err != nil || !changed {
			return err
		}
		res.DurableRewrapped++
		return durable.PutDataKey(ctx, conv, nw)
	})
	return res, err
}

// ErrMasterKeyInUse: a master key to retire still wraps data keys.
var ErrMasterKeyInUse = errors.New("master key still wraps data keys")

// Retire forgets master key id: it refuses while any data key is still
// wrapped by it (run Rekey first) and for the ring's newest key. After
// it, the key may be removed from the key file.
//
// The durable copy (nil: none) is checked as well: a key Redis lost may
// live on there only, and its history would not open without the master
// key.
func Retire(ctx context.Context, ring KeyRing, reg Registry, durable DurableKeys, id string) error {
	if id == ring.Newest() {
		return fmt.Errorf("retire %q: it is the newest master key, the one new data keys are wrapped with", id)
	}
	n := 0
	var example string
	count := func(conv, stored string) error {
		w, err := ParseWrapped(stored)
		if err != nil || w.MasterID == id {
			n++
			example = conv
		}
		return nil
	}
	if err := reg.EachDataKey(ctx, count); err != nil {
		return err
	}
	if durable != nil {
		if err := durable.EachDataKey(ctx, count); err != nil {
			return err
		}
	}
	if n > 0 {
		return fmt.Errorf("retire %q: %d data keys (%s among them) are wrapped by it; run rekey first: %w", id, n, example, ErrMasterKeyInUse)
	}
	return reg.DeleteCanary(ctx, id)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
