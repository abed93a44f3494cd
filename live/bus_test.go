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
