package readpath

import (
	"context"
	"fmt"
	"testing"

	"github.com/offlinebox/offlinebox/internal/testenv"

	"github.com/offlinebox/offlinebox/redisstore"
)

// The read path on a Redis Cluster: every script stays in one slot and
// the pipelines that span conversations are split per node.
func TestReadPathRunsOnRedisCluster(t *testing.T) {
	rdb, prefix := testenv.RedisCluster(t)
	s, err := newRig(rdb, redisstore.Config{Prefix: prefix, LargeGroupThreshold: 3})
	if err != nil {
		t.Fatal(err)
	}
	rs := newReadSeed(t, s)
	ctx := context.Background()
	var mentions []uint64
	for i := range 6 {
		c := fmt.Sprint("c", i)
		rs.group(c, "bob", "ann")
		mentions = append(mentions, rs.say(c, group, "bob", "", "@ann", "ann"))
		rs.say(c, group, "bob", "", "more")
	}
	rs.group("big", "bob", "ann", "cid", "dan")
	rs.say("big", group, "cid", "", "large")

	// Slices of one message keep each mention in the lane (a slice that
	// carries a mention is not repeated there).
	res, err := s.Sync(ctx, syncReq("ann", "phone", 1, 64<<10))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Mentions) != 6 || len(res.Convs) != 7 {
		t.Fatalf("sync on the cluster:\n%s", render(res))
	}
	l, err := s.ListConversations(ctx, "ann", "phone", ListCursor{}, 3)
	if err != nil || len(l.Items) != 3 || l.Next == nil {
		t.Fatalf("list on the cluster: %+v %v", l, err)
	}
	if _, err := s.ReadPage(ctx, "ann", "c3", PageQuery{HasAfter: true, Limit: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AckDevice(ctx, "ann", "phone", []redisstore.AckItem{{Conv: "c1", Seq: 3, Epoch: res.Convs[0].Epoch}}, 1); err != nil {
		t.Fatal(err)
	}
	var marks []redisstore.ReadMark
	for i, m := range mentions {
		marks = append(marks, redisstore.ReadMark{User: "ann", Conv: fmt.Sprint("c", i), Seq: m})
	}
	if _, err := s.ApplyReads(ctx, marks); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyPreviews(ctx, latestOf(t, s, "c2", 3)); err != nil {
		t.Fatal(err)
	}
	if a, err := s.ConversationAccess(ctx, "ann", []string{"c0", "c5", "big", "nope"}); err != nil || !a["c5"].Member || a["nope"].Exists {
		t.Fatalf("access on the cluster: %+v %v", a, err)
	}
	res, err = s.Sync(ctx, syncReq("ann", "phone", 10, 64<<10))
	if err != nil || len(res.Mentions) != 0 {
		t.Fatalf("after reading every mention: %v\n%s", err, render(res))
	}
}
