package fanout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
)

// ErrEvictingStore is the error of a Handle call while a Redis server the
// worker writes to may evict keys (its maxmemory-policy is not
// noeviction): nothing is sequenced there until it is set so.
var ErrEvictingStore = errors.New("redis may evict keys")

// ErrEvictedStore is the error of a Handle call while a Redis server the
// worker writes to evicted keys since it was verified (evicted_keys rose):
// the store is held (redisstore.Store.HoldEvicted), nothing is sequenced
// there, and the batch is waited for like a store that is down, until an
// operator runs `offlinebox repair-evicted`.
var ErrEvictedStore = errors.New("redis evicted keys since it was verified")

// evicting is ErrEvictingStore naming the first of ins that may evict
// keys, or nil when none may. A server that may drop a key loses what no
// restore puts back in time (a dedupe day: a resend sequenced twice), so
// the restorer's verification refuses it: it is waited for like a server
// that is down, batch after batch, until its policy is noeviction.
func evicting(ins []redisstore.Instance) error {
	for _, in := range ins {
		if in.Evicts != "" {
			return fmt.Errorf("%w: redis at %s may evict keys (maxmemory-policy %s); offlinebox keeps its state there: set maxmemory-policy noeviction",
				ErrEvictingStore, in.Addr, in.Evicts)
		}
	}
	return nil
}

// policyRead notes that the servers' eviction policy was just read: the
// next batch to read it again is the first one Config.EvictionRecheck
// from now.
func (r *restorer) policyRead() {
	r.policyDue.Store(time.Now().Add(r.f.cfg.EvictionRecheck).UnixNano())
}

// recheckEviction reads the eviction policy of the verified servers again
// when Config.EvictionRecheck has passed since it was last read (by a
// verification or by this), so that a CONFIG SET maxmemory-policy made
// after a server was verified is seen within that bound, not only at the
// next fence refusal. A server that may now evict keys makes the instances
// stale: the next enter verifies them again, which refuses with
// ErrEvictingStore until the policy is noeviction, as at start, and then
// lets batches through without a replay (the run_ids are verified).
//
// Its cost: every batch, an atomic load; once per EvictionRecheck, on the
// one batch that finds it due (the others go on), one INFO per master of
// the main and of the hot Redis, each bounded by the store's CallTimeout.
// A server that does not answer fails that batch, to be retried like any
// store that is down, and the next batch reads the policy again.
func (r *restorer) recheckEviction(ctx context.Context) error {
	now, due := time.Now(), r.policyDue.Load()
	if now.UnixNano() < due || !r.policyDue.CompareAndSwap(due, now.Add(r.f.cfg.EvictionRecheck).UnixNano()) {
		return nil // not due, or another batch reads it
	}
	for _, st := range r.stores() {
		ins, err := st.Instances(ctx)
		if err != nil {
			r.policyDue.Store(0)
			return fmt.Errorf("read the eviction policy again: %w", err)
		}
		if err := evicting(ins); err != nil {
			if !r.stale.Swap(true) {
				r.f.cfg.Logger.Warn("a verified redis server may now evict keys: nothing is sequenced until its policy is noeviction",
					"err", err)
			}
			return err // what verifying them again would answer, without reading them again
		}
		if err := r.evictedSince(ctx, st, ins); err != nil {
			r.stale.Store(true)
			return err
		}
	}
	return nil
}

// trustable is what verification asks of a store's servers: none may
// evict keys, and none evicted any since it was verified.
func (r *restorer) trustable(ctx context.Context, st *redisstore.Store, ins []redisstore.Instance) error {
	if err := evicting(ins); err != nil {
		return err
	}
	return r.evictedSince(ctx, st, ins)
}

// evictedSince holds the store when a server's evicted_keys rose since it
// was verified. A server that evicted keys lost state nobody can name (a
// counter, a timeline, a dedupe day, an inbox): a restore from the
// changelog's tail puts back only what the tail holds, and sequencing on
// the rest could hand out a seq twice. So the whole store is held, like
// one that lost its tail, until the repair rebuilt it (repair-evicted
// releases the hold and records the counts of then).
//
// The counts verified are kept in Redis (EvictionsSeen, so a restarted
// process still compares) and in the process (in case that very hash was
// evicted): the stored count first, else the process's own, else the
// server is new to both: its count of now is recorded when it is 0, and
// it is held when it is not (the hash itself may be what was evicted).
func (r *restorer) evictedSince(ctx context.Context, st *redisstore.Store, ins []redisstore.Instance) error {
	why, held, err := st.EvictionHold(ctx)
	if err != nil {
		return err
	}
	if held {
		r.m.evictionHeld.Set(1)
		return fmt.Errorf("%w: %s; sequencing waits for offlinebox repair-evicted", ErrEvictedStore, why)
	}
	seen, err := st.EvictionsSeen(ctx)
	if err != nil {
		return err
	}
	r.evictMu.Lock()
	defer r.evictMu.Unlock()
	if r.evicted == nil {
		r.evicted = map[string]int64{}
	}
	var fresh []redisstore.Instance
	for _, in := range ins {
		base, ok := seen[in.RunID]
		if !ok {
			base, ok = r.evicted[in.RunID]
		}
		if !ok && in.EvictedKeys > 0 {
			// Never seen, yet it evicted keys: the record of it may be
			// what went. Only a repair says it is whole.
			return r.holdEvicted(ctx, st, in, 0)
		}
		if !ok {
			fresh = append(fresh, in)
			r.evicted[in.RunID] = in.EvictedKeys
			continue
		}
		r.evicted[in.RunID] = base
		if in.EvictedKeys > base {
			return r.holdEvicted(ctx, st, in, base)
		}
	}
	r.m.evictionHeld.Set(0)
	if len(fresh) > 0 {
		return st.SeeEvictions(ctx, fresh)
	}
	return nil
}

func (r *restorer) holdEvicted(ctx context.Context, st *redisstore.Store, in redisstore.Instance, base int64) error {
	why := fmt.Sprintf("redis at %s (run_id %s) evicted %d keys since it was verified (evicted_keys %d, then %d)",
		in.Addr, in.RunID, in.EvictedKeys-base, in.EvictedKeys, base)
	set, err := st.HoldEvicted(ctx, why)
	if err != nil {
		return err
	}
	r.m.evictionHeld.Set(1)
	if set {
		r.m.evictionsFound.Inc()
		r.f.cfg.Logger.Warn("a redis server evicted keys since it was verified: sequencing is held until offlinebox repair-evicted",
			"addr", in.Addr, "run_id", in.RunID, "evicted_keys", in.EvictedKeys, "verified_at", base)
	}
	return fmt.Errorf("%w: %s; sequencing waits for offlinebox repair-evicted", ErrEvictedStore, why)
}
