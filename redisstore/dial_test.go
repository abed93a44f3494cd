package redisstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

func TestParseAddrReadsURLsHostPortsAndClusterSeeds(t *testing.T) {
	cases := []struct {
		name, addr string
		cluster    bool
		wantErr    bool
		isCluster  bool
	}{
		{"host:port", "127.0.0.1:6379", false, false, false},
		{"a URL with user, password and database", "redis://ann:secret@127.0.0.1:6379/2?dial_timeout=3s", false, false, false},
		{"a TLS URL", "rediss://127.0.0.1:6380", false, false, false},
		{"several host:port are a Cluster", "a:1, b:2", false, false, true},
		{"one seed of a Cluster", "a:1", true, false, true},
		{"a Cluster URL", "redis://a:1?addr=b:2", true, false, true},
		{"nothing", " , ", false, true, false},
		{"no port", "localhost", false, true, false},
		{"a URL of another scheme", "http://127.0.0.1:6379", false, true, false},
		{"a URL with a bad database", "redis://ann:secret@127.0.0.1:6379/x", false, true, false},
		{"a URL with an unknown option", "redis://ann:secret@127.0.0.1:6379?colour=red", false, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ParseAddr(tc.addr, tc.cluster)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("%q: no error", tc.addr)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Fatalf("the error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Cluster() != tc.isCluster {
				t.Fatalf("cluster %v, want %v", a.Cluster(), tc.isCluster)
			}
			rdb := a.Dial(DialOptions{PoolSize: 3, DialTimeout: time.Second})
			defer rdb.Close()
			var pool int
			var dial time.Duration
			switch c := rdb.(type) {
			case *redis.Client:
				pool, dial = c.Options().PoolSize, c.Options().DialTimeout
				if strings.Contains(tc.addr, "/2") && c.Options().DB != 2 {
					t.Fatalf("database %d, want the URL's 2", c.Options().DB)
				}
			case *redis.ClusterClient:
				pool, dial = c.Options().PoolSize, c.Options().DialTimeout
			}
			wantDial := time.Second
			if strings.Contains(tc.addr, "dial_timeout=3s") {
				wantDial = 3 * time.Second // the URL's own setting wins
			}
			_, isCluster := rdb.(*redis.ClusterClient)
			if pool != 3 || dial != wantDial || isCluster != tc.isCluster {
				t.Fatalf("pool %d, dial timeout %s, a %T; want 3, %s, cluster %v", pool, dial, rdb, wantDial, tc.isCluster)
			}
		})
	}
}

// A server that stops answering holds a call only until the call's
// context deadline, far inside the client's ReadTimeout, whichever way the
// address was written; a call whose context has no deadline is still
// bounded, by ReadTimeout.
func TestADialledClientGivesUpAtTheContextDeadlineAndReadTimeoutStaysTheBackstop(t *testing.T) {
	addr := testenv.RedisAddr(t)
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() {
		admin.Do(context.Background(), "CLIENT", "UNPAUSE")
		_ = admin.Close()
	})
	cases := []struct {
		name     string
		addr     string
		read     time.Duration
		deadline time.Duration // 0: a context without one
	}{
		{"host:port, a deadline", addr, time.Minute, 200 * time.Millisecond},
		{"a redis:// URL, a deadline", "redis://" + addr, time.Minute, 200 * time.Millisecond},
		{"host:port, no deadline", addr, 200 * time.Millisecond, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ParseAddr(tc.addr, false)
			if err != nil {
				t.Fatal(err)
			}
			rdb := a.Dial(DialOptions{ReadTimeout: tc.read, WriteTimeout: tc.read})
			t.Cleanup(func() { _ = rdb.Close() })
			ctx := context.Background()
			if err := rdb.Ping(ctx).Err(); err != nil { // a connection in the pool, before the pause
				t.Fatal(err)
			}
			// The pause outlasts the deadline; the call only fails if
			// something gave up before the server answered.
			if err := admin.Do(ctx, "CLIENT", "PAUSE", 2000, "ALL").Err(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { admin.Do(context.Background(), "CLIENT", "UNPAUSE") })
			call := ctx
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				call, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			err = rdb.Set(call, testenv.UniquePrefix(t)+"k", "v", 0).Err()
			if err == nil {
				t.Fatal("the call waited out the paused server: nothing bounded it")
			}
			if Permanent(err) {
				t.Fatalf("Permanent(%v) = true: a server that stopped answering is waited for", err)
			}
			if err := admin.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
