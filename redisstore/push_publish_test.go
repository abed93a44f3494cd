package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

func TestPublishUnchangedPublishesOnlyOnTheAudienceItWasResolvedFor(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
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
	for _, sharded := range []bool{true, false} {
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
		channels := []string{s.keys.ConvChannel("small"), s.keys.ConvChannel("big"), s.keys.ConvChannel("new")}
		ps := rdb.Subscribe(ctx, channels...)
		if sharded {
			ps = rdb.SSubscribe(ctx, channels...)
		}
		for range channels {
			if _, err := ps.Receive(ctx); err != nil { // the confirmations
				t.Fatal(err)
			}
		}
		sent, err := s.PublishUnchanged(ctx, sharded, batches)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for range 3 {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			m, err := ps.ReceiveMessage(rctx)
			cancel()
			if err != nil {
				break
			}
			got[m.Payload] = true
		}
		_ = ps.Close()
		for i, tc := range cases {
			if sent[i] != tc.wantSent || got[tc.name] != tc.wantSent {
				t.Errorf("sharded %v, %s: reported published %v, received %v; want %v", sharded, tc.name, sent[i], got[tc.name], tc.wantSent)
			}
		}
	}
}
