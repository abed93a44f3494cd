package embedded_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/embedded"
	"github.com/redis/go-redis/v9"
)

func redisClient(t *testing.T, addr string) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func TestRedisRestartKeepsDataOnlyWithAppendOnly(t *testing.T) {
	needServer(t, "redis-server")
	tests := []struct {
		name       string
		appendOnly bool
		crash      bool // SIGKILL instead of a clean stop
		wantKept   bool
	}{
		{name: "aof on, clean stop", appendOnly: true, wantKept: true},
		{name: "aof on, killed", appendOnly: true, crash: true, wantKept: true},
		{name: "aof off, clean stop", appendOnly: false, wantKept: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := embedded.StartRedis(lifetime(t), embedded.RedisOptions{
				Dir: t.TempDir(), AppendOnly: tt.appendOnly, AppendFsync: "always",
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := timeout(t, 30*time.Second)
			addr := p.Addr()
			if err := redisClient(t, addr).Set(ctx, "k", "v1", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if tt.crash {
				err = p.Kill()
			} else {
				err = p.Stop(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if p.Addr() != addr {
				t.Fatalf("restart moved the server from %s to %s", addr, p.Addr())
			}
			got, err := redisClient(t, addr).Get(ctx, "k").Result()
			switch {
			case tt.wantKept && (err != nil || got != "v1"):
				t.Fatalf("after restart GET k = %q, %v; want v1", got, err)
			case !tt.wantKept && !errors.Is(err, redis.Nil):
				t.Fatalf("after restart without AOF GET k = %q, %v; want no key", got, err)
			}
		})
	}
}

func TestRedisStopAndKillAreIdempotent(t *testing.T) {
	needServer(t, "redis-server")
	p, err := embedded.StartRedis(lifetime(t), embedded.RedisOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := timeout(t, 30*time.Second)
	if p.Pid() == 0 {
		t.Fatal("Pid is 0 while the server runs")
	}
	for i, stop := range []func() error{
		func() error { return p.Stop(ctx) },
		func() error { return p.Stop(ctx) },
		p.Kill,
	} {
		if err := stop(); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if p.Pid() != 0 {
		t.Fatalf("Pid is %d after Stop", p.Pid())
	}
	if err := redisClient(t, p.Addr()).Ping(ctx).Err(); err == nil {
		t.Fatal("server still answers after Stop")
	}
}

func TestRedisStopsWhenItsContextEnds(t *testing.T) {
	needServer(t, "redis-server")
	life, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := embedded.StartRedis(life, embedded.RedisOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	ctx := timeout(t, 30*time.Second)
	for p.Pid() != 0 {
		select {
		case <-ctx.Done():
			t.Fatal("server still runs after its context ended")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := p.Restart(ctx); !errors.Is(err, embedded.ErrStopped) {
		t.Fatalf("Restart after the context ended: %v, want ErrStopped", err)
	}
}

func TestRedisOptionsValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name  string
		opts  embedded.RedisOptions
		field string
	}{
		{"no dir", embedded.RedisOptions{}, "Dir"},
		{"negative port", embedded.RedisOptions{Dir: "x", Port: -1}, "Port"},
		{"port too high", embedded.RedisOptions{Dir: "x", Port: 70000}, "Port"},
		{"bad fsync", embedded.RedisOptions{Dir: "x", AppendFsync: "sometimes"}, "AppendFsync"},
		{"valid", embedded.RedisOptions{Dir: "x", AppendFsync: "always"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Validate: %v, want an error naming %s", err, tt.field)
			}
		})
	}
}
