package readpath

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"

	"github.com/offlinebox/offlinebox/redisstore"
)

// TestSyncReadsSmallGroupMembershipFromItsCopyAsRedisWould syncs members,
// a former member and a member who left and came back through a store
// that keeps member copies and through fresh stores that read Redis every
// time, as the group's membership and epoch change: every answer is the
// same, lists too, and once a sync took the copies, a sync or list they
// stand for reads no membership field (nor counts notices) in Redis.
func TestSyncReadsSmallGroupMembershipFromItsCopyAsRedisWould(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := testenv.Redis(t)
	var fields, reads atomic.Int64
	rdb.AddHook(commandHook(func(cmd redis.Cmder) {
		if n := strings.ToLower(cmd.Name()); n == "hexists" || n == "zcount" {
			reads.Add(1)
		}
		if a := cmd.Args(); strings.EqualFold(cmd.Name(), "hget") && len(a) > 1 &&
			(strings.HasSuffix(fmt.Sprint(a[1]), ":mem") || strings.HasSuffix(fmt.Sprint(a[1]), ":past")) {
			fields.Add(1)
		}
	}))
	s, err := newRig(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	rs := newReadSeed(t, s)
	rs.group("g", "ann", "bob", "cid", "dan")
	membership := func(kind schemas.Kind, who string) {
		rs.send(&schemas.Message{ConvId: "g", ConvType: group, Sender: map[bool]string{true: "ann", false: who}[kind == schemas.Kind_KIND_MEMBER_JOIN],
			Kind: kind, Recipients: []string{who}})
	}
	talk := func(n int) {
		for i := range n {
			rs.say("g", group, "ann", "", fmt.Sprint("m", i))
		}
	}
	talk(3)
	membership(schemas.Kind_KIND_MEMBER_LEAVE, "cid")
	talk(2)
	membership(schemas.Kind_KIND_MEMBER_LEAVE, "dan")
	membership(schemas.Kind_KIND_MEMBER_JOIN, "dan")
	talk(2)
	users := []string{"bob", "cid", "dan", "eve"}
	sync := func(st *rig, user string) (string, int64) {
		t.Helper()
		before := fields.Load()
		res, err := st.Sync(ctx, syncReq(user, "phone", 50, 1<<20))
		if err != nil {
			t.Fatal(err)
		}
		return render(res), fields.Load() - before
	}
	list := func(st *rig, user string) (string, int64) {
		t.Helper()
		before := reads.Load()
		l, err := st.ListConversations(ctx, user, "", ListCursor{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, it := range l.Items {
			fmt.Fprintf(&b, "%s unread=%d last=%d read=%d left=%v\n", it.Conv, it.Unread, it.LastSeq, it.ReadSeq, it.Left)
		}
		return b.String(), reads.Load() - before
	}
	same := func(step string) {
		t.Helper()
		fresh, err := newRig(rdb, redisstore.Config{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range users {
			want, _ := list(fresh, u)
			if got, _ := list(s, u); got != want {
				t.Fatalf("%s: %s's list with the copies\n%s\nwithout\n%s", step, u, got, want)
			}
		}
		for _, u := range users {
			want, _ := sync(fresh, u)
			for range 2 { // the first may take the copy
				if got, _ := sync(s, u); got != want {
					t.Fatalf("%s: %s with the copy\n%s\nwithout\n%s", step, u, got, want)
				}
			}
			if got, n := sync(s, u); got != want || n != 0 {
				t.Fatalf("%s: %s then %d HGETs, answer\n%s\nwant none and\n%s", step, u, n, got, want)
			}
		}
		for _, u := range users {
			want, _ := list(fresh, u)
			if got, n := list(s, u); got != want || n != 0 {
				t.Fatalf("%s: %s's list then %d HEXISTS and ZCOUNTs\n%s\nwant none and\n%s", step, u, n, got, want)
			}
		}
	}
	same("first")
	membership(schemas.Kind_KIND_MEMBER_LEAVE, "bob")
	membership(schemas.Kind_KIND_MEMBER_JOIN, "cid")
	talk(1)
	same("bob left, cid came back")

	// Another epoch whose members differ at the same mver (what a rebuild
	// from other history could leave).
	meta, err := rdb.HMGet(ctx, s.keys.ConvMeta("g"), redisstore.MetaEpoch).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, s.keys.ConvMeta("g"), redisstore.MetaEpoch, redisstore.ReplyUint(meta[0])+1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, s.keys.Members("g"), "bob", 0).Err(); err != nil {
		t.Fatal(err)
	}
	same("a new epoch")
}

func TestAMemberCopyIsTakenByOneSyncAtATimeAndAnAbandonedTakeFreesIt(t *testing.T) {
	s := &Reader{members: newMemberCopies()}
	if _, take := s.members.use("g"); !take {
		t.Fatal("the first sync without a copy does not take it")
	}
	if c, take := s.members.use("g"); c != nil || take {
		t.Fatalf("a second sync meanwhile got copy %v, take %v; want neither", c, take)
	}
	s.abandonTakes([]string{"g"}, []*memberRead{{mem: &redis.ScanCmd{}}})
	if _, take := s.members.use("g"); !take {
		t.Fatal("after an abandoned take no sync takes the copy")
	}
	s.members.took("g", &memberCopy{epoch: 1, mver: 2, joined: map[string]string{"ann": "0"}})
	if c, take := s.members.use("g"); c == nil || take || s.members.copies.Weight() != 1 {
		t.Fatalf("after a take: copy %v, take %v, %d entries kept; want the copy", c, take, s.members.copies.Weight())
	}
}
