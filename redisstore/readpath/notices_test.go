package readpath

import (
	"context"
	"fmt"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"

	"github.com/offlinebox/offlinebox/redisstore"
)

func TestSmallGroupUnreadLeavesOutJoinAndLeaveNoticesAsLargeGroupsDo(t *testing.T) {
	s := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	ctx := context.Background()
	rs.group("small", "ann", "bob", "cid")
	for i := range 30 {
		rs.send(&schemas.Message{ConvId: "small", ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: "ann",
			Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{fmt.Sprintf("u%d", i)}})
	}
	rs.send(&schemas.Message{ConvId: "small", ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: "u0",
		Kind: schemas.Kind_KIND_MEMBER_LEAVE, Recipients: []string{"u0"}})
	var last uint64
	for range 20 {
		last = rs.say("small", group, "bob", "", "hello")
	}
	unread := func() uint64 {
		t.Helper()
		l, err := s.ListConversations(ctx, "cid", "", ListCursor{}, 10)
		if err != nil || len(l.Items) != 1 {
			t.Fatalf("list: %+v (err %v)", l, err)
		}
		res, err := s.Sync(ctx, syncReq("cid", "phone", 5, 1<<20))
		if err != nil {
			t.Fatal(err)
		}
		synced := l.Items[0].Unread
		for _, c := range res.Convs {
			synced = c.Unread
		}
		if synced != l.Items[0].Unread {
			t.Fatalf("sync says unread %d, the list %d", synced, l.Items[0].Unread)
		}
		return synced
	}
	if got := unread(); got != 20 {
		t.Fatalf("unread %d after 31 join and leave records and 20 messages, want 20", got)
	}
	if _, err := s.ApplyReads(ctx, []redisstore.ReadMark{{User: "cid", Conv: "small", Seq: last - 5}}); err != nil {
		t.Fatal(err)
	}
	if got := unread(); got != 5 {
		t.Fatalf("unread %d after reading all but the last 5 messages, want 5", got)
	}
}
