package fanout

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/embedded"
)

// A Redis server that may evict keys (a maxmemory with a policy other than
// noeviction) would drop state no restore puts back in time: fanout
// sequences nothing there, and says why, until the policy is noeviction.
func TestNothingIsSequencedOnARedisThatMayEvictKeys(t *testing.T) {
	ctx := context.Background()
	_, h := newHarnessOnOwnRedis(t, embedded.RedisOptions{Args: []string{"--maxmemory", "64mb", "--maxmemory-policy", "volatile-lru"}})
	rdb := h.rdb
	f := h.fanout(nil)

	recs := records(msg("g", "create", "a", join("a", "b")))
	_, err := f.Handle(ctx, recs)
	if !errors.Is(err, ErrEvictingStore) || !strings.Contains(err.Error(), "volatile-lru") {
		t.Fatalf("Handle on an evicting server: %v, want ErrEvictingStore naming the policy", err)
	}
	if got := h.head("g"); got.Exists {
		t.Fatalf("g was sequenced on an evicting server: %+v", got)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	handle(t, f, recs)
	if got := h.head("g"); got.Seq != 1 {
		t.Fatalf("g after the policy was set to noeviction: %+v, want seq 1", got)
	}
}

// A server verified with noeviction whose policy is then set, at runtime,
// to one that may evict keys is seen within Config.EvictionRecheck, not
// only at the next fence refusal: the batches after it are refused with
// ErrEvictingStore naming the policy (waited for, never dead-lettered),
// nothing is sequenced there, and once the policy is noeviction again the
// next batch goes through.
func TestAnEvictionPolicySetAtRuntimeStopsSequencingWithinTheRecheckInterval(t *testing.T) {
	ctx := context.Background()
	_, h := newHarnessOnOwnRedis(t, embedded.RedisOptions{Args: []string{"--maxmemory", "64mb"}}) // noeviction
	const recheck = 200 * time.Millisecond
	cfg := h.cfg
	cfg.EvictionRecheck = recheck
	f := h.fanoutWith(nil, cfg)
	handle(t, f, records(msg("g", "create", "a", join("a", "b"))))

	if err := h.rdb.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(recheck + 50*time.Millisecond)
	for _, id := range []string{"g-1", "g-1 retried"} {
		dead, err := f.Handle(ctx, records(msg("g", "g-1", "b")))
		if !errors.Is(err, ErrEvictingStore) || !strings.Contains(err.Error(), "allkeys-lru") || len(dead) != 0 {
			t.Fatalf("%s after the policy was set to allkeys-lru: %v (%d dead letters), want ErrEvictingStore naming it and none",
				id, err, len(dead))
		}
	}
	if got := h.head("g"); got.Seq != 1 {
		t.Fatalf("g on a server that may evict keys: %+v, want still seq 1", got)
	}

	if err := h.rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	handle(t, f, records(msg("g", "g-1", "b")))
	if got := h.head("g"); got.Seq != 2 {
		t.Fatalf("g after the policy was set back to noeviction: %+v, want seq 2", got)
	}
}
