package rebuild

import (
	"context"
	"github.com/offlinebox/offlinebox/redisstore"
	"testing"
)

// After an eviction took one of a user's keys the list indexes repeat
// (the mention lane, the inbox) or the index itself, reindexing leaves
// the indexes equal to what they index; without an inbox, nothing of them
// is left to be compared (the inbox's next build makes them again).
func TestReindexUsersRebuildsTheListIndexesAnEvictionLeftApart(t *testing.T) {
	cases := []struct {
		name  string
		lose  func(k redisstore.Keys) []string
		inbox bool // the inbox survives: the indexes are built again
	}{
		{"mention index evicted", func(k redisstore.Keys) []string { return []string{k.MentionIndex("u")} }, true},
		{"mention lane evicted", func(k redisstore.Keys) []string { return []string{k.Mentions("u")} }, true},
		{"inbox evicted, its indexes' lane and mention index kept", func(k redisstore.Keys) []string { return []string{k.Inbox("u")} }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := expStore(t)
			ctx := context.Background()
			ups := []redisstore.InboxUpdate{
				{User: "u", Conv: "c1", Form: redisstore.InboxGroup, Events: []redisstore.InboxEvent{{Kind: redisstore.InboxMentioned, Seq: 6, WriteMS: 2000}}},
				{User: "u", Conv: "c2", Form: redisstore.InboxGroup, Events: []redisstore.InboxEvent{{Kind: redisstore.InboxMentioned, Seq: 4, WriteMS: 2000}}},
				{User: "u", Conv: "c3", Form: redisstore.InboxGroup, Events: []redisstore.InboxEvent{{Kind: redisstore.InboxConvertLarge, Seq: 9, WriteMS: 2000}}},
			}
			_, errs := s.ApplyInboxes(ctx, ups)
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if drift, built := indexDrift(t, s, "u"); drift != "" || !built {
				t.Fatalf("seeded indexes: drift %q, built %v", drift, built)
			}
			if err := s.rdb.Del(ctx, tc.lose(s.keys)...).Err(); err != nil {
				t.Fatal(err)
			}
			if drift, _ := indexDrift(t, s, "u"); tc.inbox && drift == "" {
				t.Fatal("the loss left the indexes equal to what they index: nothing to prove")
			}
			n, err := s.ReindexUsers(ctx)
			if err != nil || n != 1 {
				t.Fatalf("ReindexUsers = %d, %v; want 1 user", n, err)
			}
			drift, built := indexDrift(t, s, "u")
			if (tc.inbox && drift != "") || built != tc.inbox {
				t.Fatalf("after reindexing: drift %q, built %v; want none, built %v", drift, built, tc.inbox)
			}
			if !tc.inbox {
				if has, _ := s.rdb.Exists(ctx, s.keys.MentionIndex("u")).Result(); has != 0 {
					t.Fatal("a mention index without its inbox was kept: it would be compared once the inbox is indexed again")
				}
			}
		})
	}
}
