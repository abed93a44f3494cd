package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	ownRedisOnce sync.Once
	ownRedisAddr string
	ownRedisErr  error
	prefixSeq    atomic.Int64
)

// missing skips the test, or fails it where servers are required.
func missing(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv("OFFLINEBOX_REQUIRE_SERVERS") == "1" {
		t.Fatalf("%s is required but not available: %v", what, err)
	}
	t.Skipf("%s not available: %v", what, err)
}

// RedisAddr returns the address of a running redis-server.
func RedisAddr(t testing.TB) string {
	t.Helper()
	if addr := os.Getenv("OFFLINEBOX_TEST_REDIS"); addr != "" {
		return addr
	}
	ownRedisOnce.Do(func() { ownRedisAddr, ownRedisErr = startOwnRedis() })
	if ownRedisErr != nil {
		missing(t, "redis-server", ownRedisErr)
	}
	return ownRedisAddr
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startOwnRedis starts a redis-server for this test binary; it dies with
// the binary (no persistence, its own temporary folder).
func startOwnRedis() (string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", err
	}
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "offlinebox-test-redis-")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
		"--dir", dir, "--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		return "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return addr, nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return "", fmt.Errorf("redis-server on %s did not answer: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
