package testenv

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisClusterAddrs returns the node addresses of a running Redis Cluster:
// the comma-separated list in OFFLINEBOX_TEST_REDIS_CLUSTER, else a
// 3-master cluster started for this test binary.
func RedisClusterAddrs(t testing.TB) []string {
	t.Helper()
	if addrs := os.Getenv("OFFLINEBOX_TEST_REDIS_CLUSTER"); addrs != "" {
		return strings.Split(addrs, ",")
	}
	addrs, err := own.start(&own.cluster, "redis-cluster", startOwnCluster)
	if err != nil {
		missing(t, "redis cluster", err)
	}
	return strings.Split(addrs, ",")
}

// RedisCluster returns a client of a real Redis Cluster of 3 masters and a
// key prefix no other test uses. The cluster is shared by the binary's
// tests, so every key a test writes must start with the prefix; the prefix
// holds no braces, so a key's hash tag stays the caller's choice.
func RedisCluster(t testing.TB) (*redis.ClusterClient, string) {
	t.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: RedisClusterAddrs(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := rdb.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error {
		return shard.Ping(ctx).Err()
	})
	if err != nil {
		t.Fatalf("ping redis cluster: %v", err)
	}
	return rdb, UniquePrefix(t)
}
