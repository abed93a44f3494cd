package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

func TestPublishUnchangedPublishesOnlyOnTheAudienceItWasResolvedFor(t *testing.T) {
	t.Run("standalone, sharded", func(t *testing.T) {
		rdb, prefix := testenv.Redis(t)
		checkPublishUnchanged(t, rdb, prefix, true)
	})
	t.Run("standalone, classic", func(t *testing.T) {
		rdb, prefix := testenv.Redis(t)
		checkPublishUnchanged(t, rdb, prefix, false)
	})
	t.Run("cluster", func(t *testing.T) {
		rdb, prefix := testenv.RedisCluster(t)
		checkPublishUnchanged(t, rdb, prefix, true)
	})
}

func checkPublishUnchanged(t *testing.T, rdb redis.UniversalClient, prefix string, sharded bool) {
	s, err := New(rdb, Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for conv, meta := range map[string][]any{"small": {"mver", 4}, "big": {"mver", 9, "large", 1}} {
		if err := rdb.HSet(ctx, s.keys.ConvMeta(conv), meta...).Err(); err != nil {
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
		{"an older membership", ChannelBatch{Conv: "small", Audience: PushAudience{Version: 3}}, false},
		{"a newer membership", ChannelBatch{Conv: "small", Audience: PushAudience{Version: 5}}, false},
		{"grown large since", ChannelBatch{Conv: "big", Audience: PushAudience{Version: 9}}, false},
		{"read as large, is not", ChannelBatch{Conv: "small", Audience: PushAudience{Version: 4, Large: true}}, false},
	}
	batches := make([]ChannelBatch, len(cases))
	for i, tc := range cases {
		batches[i] = tc.batch
		batches[i].Data = []byte(tc.name)
	}
	// one subscription a channel: on a Cluster each lives on its slot's node
	got := make(chan string, len(cases))
	for _, conv := range []string{"small", "big", "new"} {
		var ps *redis.PubSub
		if sharded {
			ps = rdb.SSubscribe(ctx, s.keys.ConvChannel(conv))
		} else {
			ps = rdb.Subscribe(ctx, s.keys.ConvChannel(conv))
		}
		t.Cleanup(func() { _ = ps.Close() })
		if _, err := ps.Receive(ctx); err != nil { // the confirmation
			t.Fatal(err)
		}
		go func() {
			for m := range ps.Channel() {
				got <- m.Payload
			}
		}()
	}
	sent, err := s.PublishUnchanged(ctx, sharded, batches)
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
