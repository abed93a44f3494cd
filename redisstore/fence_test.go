package redisstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
)

// keysUnder lists every key of the prefix with its type, as a write check.
func keysUnder(t *testing.T, rdb redis.UniversalClient, prefix string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		dump, err := rdb.Dump(ctx, iter.Val()).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[iter.Val()] = dump
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Every write of the sequencing path refuses to run on a server instance
// the fence has not verified, and changes nothing there; verified, it runs.
func TestFencedWritesRunOnlyOnVerifiedInstances(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := testenv.Redis(t)
	fence := NewFence()
	s, err := New(rdb, Config{Prefix: prefix, Fence: fence})
	if err != nil {
		t.Fatal(err)
	}
	writes := []struct {
		name string
		call func() error
	}{
		{"sequence", func() error {
			_, err := s.Sequence(ctx, "g", []*schemas.Message{memberMsg("g", "j", "a", schemas.Kind_KIND_MEMBER_JOIN, "a", "b")}, nil, seqTestNow)
			return err
		}},
		{"apply inbox", func() error {
			_, errs := s.ApplyInboxes(ctx, []InboxUpdate{{User: "b", Conv: "g", Form: InboxGroup,
				Events: []InboxEvent{ev(InboxDelivered, 1)}}})
			return errs[0]
		}},
		{"mark large converted", func() error { return s.MarkLargeConverted(ctx, "g") }},
		{"raise the changelog fence", func() error { return s.RaiseFence(ctx, map[int32]int64{0: 5}) }},
		{"seed a head", func() error { _, err := s.SeedHead(ctx, "h", 7, 3, schemas.ConvType_CONV_TYPE_GROUP); return err }},
	}
	ins, err := s.Instances(ctx)
	if err != nil || len(ins) != 1 || len(ins[0].RunID) != 40 {
		t.Fatalf("instances %v, %v", ins, err)
	}
	for _, verified := range [][]string{nil, {"0123456789012345678901234567890123456789"}} {
		fence.Verify(verified)
		for _, w := range writes {
			before := keysUnder(t, rdb, prefix)
			if err := w.call(); !errors.Is(err, ErrFenced) {
				t.Errorf("%s with %v verified: %v, want ErrFenced", w.name, verified, err)
			}
			if after := keysUnder(t, rdb, prefix); !maps.Equal(before, after) {
				t.Errorf("%s refused, yet it wrote", w.name)
			}
		}
	}
	fence.Verify([]string{"0123456789012345678901234567890123456789", ins[0].RunID})
	for _, w := range writes {
		if err := w.call(); err != nil {
			t.Errorf("%s on a verified instance: %v", w.name, err)
		}
	}
}

// The changelog fence only rises, per partition, and a server without
// one says so.
func TestChangelogFenceOnlyRises(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := testenv.Redis(t)
	s, err := New(rdb, Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.AppliedFence(ctx); ok || err != nil {
		t.Fatalf("a new store has a fence: %v %v", ok, err)
	}
	for _, step := range []map[int32]int64{{0: 10, 1: 4}, {0: 7, 2: 1}, {1: 9}} {
		if err := s.RaiseFence(ctx, step); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := s.AppliedFence(ctx)
	if want := map[int32]int64{0: 10, 1: 9, 2: 1}; !ok || err != nil || !maps.Equal(got, want) {
		t.Fatalf("fence %v (%v, %v), want %v", got, ok, err, want)
	}
}

// On a cluster every master keeps a copy of the changelog fence (each one
// vouches only for its own server's writes), and every master's run_id is
// among the instances.
func TestChangelogFenceHasACopyOnEveryClusterMaster(t *testing.T) {
	ctx := context.Background()
	crdb, prefix := testenv.RedisCluster(t)
	s, err := New(crdb, Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"fence:0", "fence:1", "c:conv-7", "u:alice", "123456789"} {
		want, err := crdb.ClusterKeySlot(ctx, "{"+tag+"}x").Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := keySlot(tag); int64(got) != want {
			t.Errorf("slot of %q: %d, the cluster says %d", tag, got, want)
		}
	}
	ins, err := s.Instances(ctx)
	if err != nil || len(ins) != 3 {
		t.Fatalf("instances of a 3-master cluster: %v, %v", ins, err)
	}
	keys, err := s.fenceKeys(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	on := map[string]bool{}
	for _, k := range keys {
		slot, err := crdb.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		on[fmt.Sprint(masterOf(t, crdb, int(slot)))] = true
	}
	if len(keys) != 3 || len(on) != 3 {
		t.Fatalf("fence copies %v on masters %v, want one on each of 3", keys, on)
	}
	if err := s.RaiseFence(ctx, map[int32]int64{3: 42}); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.AppliedFence(ctx); !ok || err != nil || got[3] != 42 {
		t.Fatalf("fence %v (%v, %v)", got, ok, err)
	}
	// One master lost its copy: that server may lack anything.
	if err := crdb.Del(ctx, keys[1]).Err(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.AppliedFence(ctx); ok || err != nil {
		t.Fatalf("a master without its copy still gives a fence (%v, %v)", ok, err)
	}
}

func masterOf(t *testing.T, c *redis.ClusterClient, slot int) string {
	t.Helper()
	shards, err := c.ClusterShards(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if int64(slot) >= r.Start && int64(slot) <= r.End {
				for _, n := range sh.Nodes {
					if n.Role == "master" {
						return fmt.Sprintf("%s:%d", n.IP, n.Port)
					}
				}
			}
		}
	}
	t.Fatalf("slot %d has no master", slot)
	return ""
}
