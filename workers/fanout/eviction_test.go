package fanout

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

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

// evict makes the server drop keys for memory, as a maxmemory set too low
// under allkeys-lru does, then sets it back to noeviction: its
// evicted_keys rises, and so much is gone that nothing can say what.
func evict(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	ctx := context.Background()
	for _, kv := range [][2]string{{"maxmemory-policy", "allkeys-lru"}, {"maxmemory", "4mb"}} {
		if err := rdb.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	filler := strings.Repeat("x", 16<<10)
	for i := 0; i < 1000; i++ {
		if err := rdb.Set(ctx, fmt.Sprintf("filler:%d", i), filler, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "64mb"}} {
		if err := rdb.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	info, err := rdb.Info(ctx, "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "evicted_keys:"); ok {
			n, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if n == 0 {
		t.Fatal("the server evicted nothing")
	}
	return n
}

// A server whose evicted_keys rose since fanout verified it is held like
// one that lost its tail, whatever its policy is now: no batch is
// sequenced there (ErrEvictedStore, waited for, never dead-lettered), by
// this process or one started after it, until the repair releases the
// hold; the finding is counted and the gauge says it is held.
func TestARedisThatEvictedKeysSinceItWasVerifiedIsHeldUntilRepaired(t *testing.T) {
	ctx := context.Background()
	_, h := newHarnessOnOwnRedis(t, embedded.RedisOptions{Args: []string{"--maxmemory", "64mb"}}) // noeviction
	const recheck = 100 * time.Millisecond
	cfg := h.cfg
	cfg.EvictionRecheck = recheck
	f := h.fanoutWith(nil, cfg)
	handle(t, f, records(msg("g", "create", "a", join("a", "b"))))
	if v := testutil.ToFloat64(f.restoreMetrics.evictionHeld); v != 0 {
		t.Fatalf("held %v on a server that evicted nothing", v)
	}

	evicted := evict(t, h.rdb.(*redis.Client))
	time.Sleep(recheck + 50*time.Millisecond)
	for _, c := range []struct {
		name string
		f    *Fanout
	}{{"the verifying process", f}, {"the same, again", f}, {"a process started after", h.fanoutWith(nil, cfg)}} {
		dead, err := c.f.Handle(ctx, records(msg("g2", "g2-create", "a", join("a", "b"))))
		if !errors.Is(err, ErrEvictedStore) || !strings.Contains(err.Error(), fmt.Sprintf("evicted %d keys", evicted)) || len(dead) != 0 {
			t.Fatalf("%s: %v (%d dead letters), want ErrEvictedStore naming %d evicted keys", c.name, err, len(dead), evicted)
		}
		if v := testutil.ToFloat64(c.f.restoreMetrics.evictionHeld); v != 1 {
			t.Fatalf("%s: held gauge %v, want 1", c.name, v)
		}
	}
	if got := h.head("g2"); got.Exists {
		t.Fatalf("g2 was sequenced on a server that evicted keys: %+v", got)
	}
	if v := testutil.ToFloat64(f.restoreMetrics.evictionsFound); v != 1 {
		t.Fatalf("evictions found %v, want 1", v)
	}
	if why, held, err := h.store.EvictionHold(ctx); err != nil || !held || !strings.Contains(why, "evicted") {
		t.Fatalf("hold %q %v %v", why, held, err)
	}

	// What repair-evicted does once every conversation is rebuilt.
	ins, err := h.store.Instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.store.ReleaseEvictionHold(ctx, ins); err != nil {
		t.Fatal(err)
	}
	handleUntilDone(t, f, records(msg("g2", "g2-create", "a", join("a", "b"))))
	if got := h.head("g2"); got.Seq != 1 {
		t.Fatalf("g2 after the repair: %+v, want seq 1", got)
	}
	if v := testutil.ToFloat64(f.restoreMetrics.evictionHeld); v != 0 {
		t.Fatalf("held gauge %v after the repair, want 0", v)
	}
}
