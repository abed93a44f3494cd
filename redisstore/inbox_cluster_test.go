package redisstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
)

// The fanout's scripts and calls run unchanged on a Redis Cluster of 3
// masters: each script touches one hash slot.
func TestFanoutStoreCallsRunOnARedisCluster(t *testing.T) {
	ctx := context.Background()
	crdb, prefix := testenv.RedisCluster(t)
	s, err := New(crdb, Config{Prefix: prefix, LargeGroupThreshold: 3})
	if err != nil {
		t.Fatal(err)
	}
	var convs []string
	for i := range 6 { // conversations spread over the masters
		conv := fmt.Sprintf("c%d", i)
		convs = append(convs, conv)
		res, err := s.Sequence(ctx, conv, []*schemas.Message{
			memberMsg(conv, "j", "a", schemas.Kind_KIND_MEMBER_JOIN, "a", "b", "c", "d"),
			groupMsg(conv, "m", "a"),
			groupMsg(conv, "m", "a"),
		}, []string{"a", "b"}, seqTestNow)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqs(res.Items); fmt.Sprint(got) != "[new 1 new 2 dup 2]" || res.LargeFrom != 1 {
			t.Fatalf("%s: %v, large from %d", conv, got, res.LargeFrom)
		}
		mem, err := s.Members(ctx, conv)
		if err != nil || len(mem) != 4 {
			t.Fatalf("%s members %v, %v", conv, mem, err)
		}
	}
	var ups []InboxUpdate
	for _, u := range []string{"a", "b", "c", "d", "e", "f"} {
		for _, conv := range convs {
			ups = append(ups, InboxUpdate{User: u, Conv: conv, Form: InboxGroup,
				Events: []InboxEvent{ev(InboxDelivered, 1), ev(InboxMentioned, 2)}})
		}
	}
	outs, errs := s.ApplyInboxes(ctx, ups)
	for i := range ups {
		if errs[i] != nil || outs[i] != InboxApplied {
			t.Fatalf("update %d on the cluster: %v, %v", i, outs[i], errs[i])
		}
	}
	outs, errs = s.ApplyInboxes(ctx, ups)
	for i := range ups {
		if errs[i] != nil || outs[i] != InboxReplayed {
			t.Fatalf("replay of update %d on the cluster: %v, %v", i, outs[i], errs[i])
		}
	}

	// A cluster main store can hand a user to a standalone hot store.
	rdb, hotPrefix := testenv.Redis(t)
	hot, err := New(rdb, Config{Prefix: hotPrefix})
	if err != nil {
		t.Fatal(err)
	}
	router := NewInboxRouter(s, hot, 0)
	if err := router.MoveToHot(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	ib, err := rdb.HGetAll(ctx, hot.Keys().Inbox("b")).Result()
	if err != nil || ib["c0:l"] != "2" || ib["c0:r"] != "0" || len(ib) != 6*4+1 || ib[InboxIndexed] != "1" { // 4 fields of 6 conversations, the index mark
		t.Fatalf("b's inbox on the hot store: %v, %v", ib, err)
	}
}
