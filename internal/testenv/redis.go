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
