package redisstore

import (
	"context"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
)

// A server that lost its script cache (a restart, a failover, SCRIPT
// FLUSH) answers NOSCRIPT to every pipelined call: each call must run once
// after the script is loaded again, so a first application still reports
// itself applied, and a replay replayed.
func TestAPipelineMeetingAFlushedScriptCacheRunsEachCallOnce(t *testing.T) {
	ctx := context.Background()
	s := seqTestStore(t, 100)
	updates := []InboxUpdate{
		{User: "ann", Conv: "c", Form: InboxGroup, Events: []InboxEvent{ev(InboxDelivered, 1)}},
		{User: "bob", Conv: "c", Form: InboxGroup, Events: []InboxEvent{ev(InboxDelivered, 1)}},
	}
	for _, want := range []InboxOutcome{InboxApplied, InboxReplayed} {
		if err := s.rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		outs, errs := s.ApplyInboxes(ctx, updates)
		for i := range updates {
			if errs[i] != nil || outs[i] != want {
				t.Fatalf("update %d after a flush: outcome %d, error %v; want %d", i, outs[i], errs[i], want)
			}
		}
	}
	if got := readInbox(t, s, "ann").unread("c"); got != 1 {
		t.Fatalf("ann's unread is %d after one delivery applied across two flushes, want 1", got)
	}
	if err := s.rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sequence(ctx, "g", []*schemas.Message{groupMsg("g", "m1", "ann")}, nil, 1000); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	n, err := ReadPathForTests.PageLen(ctx, s, "ann", "g", 10)
	if err != nil || n != 1 {
		t.Fatalf("read after a flush: %d messages, error %v; want 1", n, err)
	}
}
