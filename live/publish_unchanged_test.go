package live

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
)

func TestPublishUnchangedPublishesOnlyOnTheAudienceItWasResolvedFor(t *testing.T) {
	t.Run("standalone, sharded", func(t *testing.T) {
		rdb, prefix := testenv.Redis(t)
		checkPublishUnchanged(t, rdb, prefix, nil)
	})
	t.Run("standalone, classic", func(t *testing.T) {
		rdb, prefix := testenv.Redis(t)
		checkPublishUnchanged(t, rdb, prefix, classic)
	})
	t.Run("cluster", func(t *testing.T) {
		rdb, prefix := testenv.RedisCluster(t)
		checkPublishUnchanged(t, rdb, prefix, nil)
	})
}

// classic makes a bus that publishes without sharding, as it does on a
// server without sharded pub/sub.
func classic(b *Bus) { b.once.Do(func() {}); b.sharded = false }

func checkPublishUnchanged(t *testing.T, rdb redis.UniversalClient, prefix string, setup func(*Bus)) {
	s, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	bus := NewBus(rdb, 5*time.Second)
	if setup != nil {
		setup(bus)
	}
	sharded := bus.Sharded(ctx)
	keys := s.Keys()
	for conv, meta := range map[string][]any{"small": {"mver", 4}, "big": {"mver", 9, "large", 1}} {
		if err := rdb.HSet(ctx, keys.ConvMeta(conv), meta...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	read, err := s.PushAudiences(ctx, []string{"small", "big", "new"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		batch    ChannelBatch
		wantSent bool
	}{
		{"as read", ChannelBatch{Conv: "small", Audience: read["small"]}, true},
		{"a large group as read", ChannelBatch{Conv: "big", Audience: read["big"]}, true},
		{"a conversation with no meta, as read", ChannelBatch{Conv: "new", Audience: read["new"]}, true},
		{"an older membership", ChannelBatch{Conv: "small", Audience: redisstore.PushAudience{Version: 3}}, false},
		{"a newer membership", ChannelBatch{Conv: "small", Audience: redisstore.PushAudience{Version: 5}}, false},
		{"grown large since", ChannelBatch{Conv: "big", Audience: redisstore.PushAudience{Version: 9}}, false},
		{"read as large, is not", ChannelBatch{Conv: "small", Audience: redisstore.PushAudience{Version: 4, Large: true}}, false},
	}
	batches := make([]ChannelBatch, len(cases))
	for i, tc := range cases {
		batches[i] = tc.batch
		batches[i].Batch = Batch{Envelopes: []Envelope{{Kind: KindPush, Conv: tc.batch.Conv, Record: []byte(tc.name)}}}
	}
	// one subscription a channel: on a Cluster each lives on its slot's node
	got := make(chan string, len(cases))
	for _, conv := range []string{"small", "big", "new"} {
		var ps *redis.PubSub
		if sharded {
			ps = rdb.SSubscribe(ctx, keys.ConvChannel(conv))
		} else {
			ps = rdb.Subscribe(ctx, keys.ConvChannel(conv))
		}
		t.Cleanup(func() { _ = ps.Close() })
		if _, err := ps.Receive(ctx); err != nil { // the confirmation
			t.Fatal(err)
		}
		go func() {
			for m := range ps.Channel() {
				b, err := Decode([]byte(m.Payload))
				if err != nil || len(b.Envelopes) != 1 {
					got <- "undecodable: " + m.Payload
					continue
				}
				got <- string(b.Envelopes[0].Record)
			}
		}()
	}
	sent, err := bus.PublishUnchanged(ctx, keys, batches)
	if err != nil {
		t.Fatal(err)
	}
	received := map[string]bool{}
	deadline := time.After(time.Second)
	for waiting := true; waiting; {
		select {
		case p := <-got:
			received[p] = true
		case <-deadline:
			waiting = false
		}
	}
	for i, tc := range cases {
		if sent[i] != tc.wantSent || received[tc.name] != tc.wantSent {
			t.Errorf("%s: reported published %v, received %v; want %v", tc.name, sent[i], received[tc.name], tc.wantSent)
		}
	}
}

func TestPushPublishScriptAnswersTheStatusesGoReads(t *testing.T) {
	want := map[string]int{"STATUS_PUBLISHED": pushStatusPublished, "STATUS_CHANGED": pushStatusChanged}
	line := "local STATUS_PUBLISHED, STATUS_CHANGED = " + strconv.Itoa(want["STATUS_PUBLISHED"]) + ", " + strconv.Itoa(want["STATUS_CHANGED"])
	if !strings.Contains(pushPublishLua, line) {
		t.Fatalf("push_publish.lua does not declare %q", line)
	}
}
