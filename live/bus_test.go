package live

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

// TestAddReturnsOnceTheServerCountsTheSubscriber: a publish right after
// Add returned reaches the subscription, on a standalone server and on a
// cluster, also for a channel removed and added again; pub/sub keeps
// nothing for a subscriber the server does not count yet.
func TestAddReturnsOnceTheServerCountsTheSubscriber(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(t *testing.T) (redis.UniversalClient, string)
	}{
		{"standalone", func(t *testing.T) (redis.UniversalClient, string) { return testenv.Redis(t) }},
		{"cluster", func(t *testing.T) (redis.UniversalClient, string) { return testenv.RedisCluster(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb, prefix := tc.client(t)
			ctx := context.Background()
			bus := NewBus(rdb, 5*time.Second)
			sub := bus.Subscribe(ctx, 16)
			t.Cleanup(sub.Close)
			for i := 0; i < 100; i++ {
				ch := fmt.Sprintf("%slive:{c:conv-%d}", prefix, i%10)
				if err := sub.Add(ctx, ch); err != nil {
					t.Fatal(err)
				}
				n, err := bus.Publish(ctx, ch, []byte(ch))
				if err != nil {
					t.Fatal(err)
				}
				if n != 1 {
					t.Fatalf("round %d: a publish right after Add reached %d subscribers, want 1", i, n)
				}
				select {
				case got := <-sub.Messages():
					if string(got) != ch {
						t.Fatalf("round %d: got %q, want %q", i, got, ch)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("round %d: nothing arrived", i)
				}
				if err := sub.Remove(ctx, ch); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestAChannelResubscribedAfterTheConnectionDroppedIsReported: the
// pub/sub connection is closed under the subscription; go-redis
// reconnects and resubscribes by itself, and the subscription names the
// channel to OnResubscribed (what was published meanwhile reached
// nobody); the first confirmation of an Add is not one. Publishes reach
// the subscription again.
func TestAChannelResubscribedAfterTheConnectionDroppedIsReported(t *testing.T) {
	const name = "resubscribed-bus"
	for _, tc := range []struct {
		name   string
		client func(t *testing.T) redis.UniversalClient
	}{
		{"standalone", func(t *testing.T) redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t), ClientName: name})
		}},
		{"cluster", func(t *testing.T) redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: testenv.RedisClusterAddrs(t), ClientName: name})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := tc.client(t)
			t.Cleanup(func() { _ = rdb.Close() })
			prefix := testenv.UniquePrefix(t)
			ctx := context.Background()
			bus := NewBus(rdb, 5*time.Second)
			sub := bus.Subscribe(ctx, 16)
			t.Cleanup(sub.Close)
			resubscribed := make(chan string, 16)
			sub.OnResubscribed(func(channel string) { resubscribed <- channel })
			channels := []string{prefix + "live:{c:a}", prefix + "live:{c:b}"}
			if err := sub.Add(ctx, channels...); err != nil {
				t.Fatal(err)
			}
			select {
			case c := <-resubscribed:
				t.Fatalf("%s reported resubscribed before any connection dropped", c)
			case <-time.After(200 * time.Millisecond):
			}
			if n := testenv.KillPubSubClients(t, rdb, name); n == 0 {
				t.Fatal("no pub/sub connection of the subscription to close")
			}
			want := map[string]bool{channels[0]: true, channels[1]: true}
			for len(want) > 0 {
				select {
				case c := <-resubscribed:
					if !want[c] {
						t.Fatalf("%s reported resubscribed, want one of %v", c, want)
					}
					delete(want, c)
				case <-time.After(15 * time.Second):
					t.Fatalf("%v never reported resubscribed", want)
				}
			}
			for _, ch := range channels {
				if n, err := bus.Publish(ctx, ch, []byte(ch)); err != nil || n != 1 {
					t.Fatalf("a publish on %s after the resubscription reached %d subscribers (%v), want 1", ch, n, err)
				}
				select {
				case got := <-sub.Messages():
					if string(got) != ch {
						t.Fatalf("got %q, want %q", got, ch)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("nothing arrived on %s after the resubscription", ch)
				}
			}
		})
	}
}
