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
	}
	return nil
}
