package embedded_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/embedded"
	"github.com/redis/go-redis/v9"
)

func TestRedisClusterSpreadsSlotsOverThreeMastersAndServesKeys(t *testing.T) {
	needServer(t, "redis-server")
	c, err := embedded.StartRedisCluster(lifetime(t), t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx := timeout(t, 30*time.Second)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = rdb.Close() })

	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]int64{}
	for _, sh := range shards {
		for _, n := range sh.Nodes {
			if n.Role != "master" {
				continue
			}
			for _, r := range sh.Slots {
				owners[fmt.Sprintf("%s:%d", n.IP, n.Port)] += r.End - r.Start + 1
			}
		}
	}
	total := int64(0)
	for _, n := range owners {
		total += n
	}
	if len(owners) != 3 || total != 16384 {
		t.Fatalf("slots owned by %d masters, %d slots in all (%v); want 3 masters, 16384 slots", len(owners), total, owners)
	}

	// Enough keys that every master holds some: the write must be routed.
	keys := map[string]string{}
	for i := range 30 {
		keys[fmt.Sprintf("{k%d}:v", i)] = fmt.Sprint(i)
	}
	for k, v := range keys {
		if err := rdb.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	for k, want := range keys {
		if got, err := rdb.Get(ctx, k).Result(); err != nil || got != want {
			t.Fatalf("GET %s = %q, %v; want %q", k, got, err, want)
		}
	}
	var holders atomic.Int32 // ForEachMaster runs the nodes concurrently
	err = rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		n, err := node.DBSize(ctx).Result()
		if n > 0 {
			holders.Add(1)
		}
		return err
	})
	if err != nil || holders.Load() != 3 {
		t.Fatalf("keys on %d masters (%v); want 3", holders.Load(), err)
	}
}
