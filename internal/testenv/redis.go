package testenv

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/embedded"
	"github.com/redis/go-redis/v9"
)

var prefixSeq atomic.Int64

// missing skips the test, or fails it where servers are required.
func missing(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv("OFFLINEBOX_REQUIRE_SERVERS") == "1" {
		t.Fatalf("%s is required but not available: %v", what, err)
	}
	t.Skipf("%s not available: %v", what, err)
}

// RedisAddr returns the address of a running redis-server: the one named by
// OFFLINEBOX_TEST_REDIS, else one started for this test binary.
func RedisAddr(t testing.TB) string {
	t.Helper()
	if addr := os.Getenv("OFFLINEBOX_TEST_REDIS"); addr != "" {
		return addr
	}
	addr, err := own.start(&own.redis, "redis", startOwnRedis)
	if err != nil {
		missing(t, "redis-server", err)
	}
	return addr
}

// Redis returns a client of a real redis-server and a key prefix no other
// test uses.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: RedisAddr(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("ping redis: %v", err)
	}
	return rdb, UniquePrefix(t)
}

// UniquePrefix names a key prefix (or database suffix) for one test.
func UniquePrefix(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_", "{", "", "}", "", ":", "").Replace(t.Name())
	if len(name) > 40 {
		name = name[:40]
	}
	return fmt.Sprintf("t%d_%d_%s:", os.Getpid(), prefixSeq.Add(1), name)
}

// FreePort asks the kernel for an unused loopback port.
func FreePort() (int, error) {
	ports, err := embedded.FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// KillPubSubClients closes, on every server rdb talks to, the pub/sub
// connections of the clients named name (CLIENT SETNAME), as a Redis
// restart or a network blip would; it returns how many it closed.
func KillPubSubClients(t testing.TB, rdb redis.UniversalClient, name string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var killed atomic.Int64
	kill := func(ctx context.Context, c *redis.Client) error {
		list, err := c.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Text()
		if err != nil {
			return fmt.Errorf("list pub/sub clients: %w", err)
		}
		for _, line := range strings.Split(list, "\n") {
			var id string
			named := false
			for _, field := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(field, "id="); ok {
					id = v
				}
				named = named || field == "name="+name
			}
			if !named || id == "" {
				continue
			}
			if err := c.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
				return fmt.Errorf("kill pub/sub client %s: %w", id, err)
			}
			killed.Add(1)
		}
		return nil
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachShard(ctx, kill)
	case *redis.Client:
		err = kill(ctx, c)
	default:
		err = fmt.Errorf("no way to reach the servers of a %T", rdb)
	}
	if err != nil {
		t.Fatal(err)
	}
	return int(killed.Load())
}
