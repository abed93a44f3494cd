package readpath

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"

	"github.com/offlinebox/offlinebox/redisstore"
)

func TestListConversationsPagesByActivityWithoutDuplicatesOrMisses(t *testing.T) {
	s := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	ctx := context.Background()
	var want []string
	for i := range 7 {
		c := fmt.Sprint("g", i)
		rs.group(c, "bob", "ann")
		rs.say(c, group, "bob", "", "hi "+c)
		want = append([]string{c}, want...)
	}
	// Three conversations active in the same millisecond: the page cursor
	// must split the tie without losing or repeating one.
	for _, c := range []string{"g1", "g3", "g5"} {
		s.rdb.ZAdd(ctx, s.keys.ConvList("ann"), redis.Z{Member: c, Score: 42})
	}
	want = []string{"g6", "g4", "g2", "g0", "g5", "g3", "g1"}
	for _, limit := range []int{1, 2, 3, 7, 50} {
		var got []string
		cur := ListCursor{}
		for page := 0; page < 20; page++ {
			l, err := s.ListConversations(ctx, "ann", "", cur, limit)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range l.Items {
				got = append(got, it.Conv)
			}
			if l.Next == nil {
				break
			}
			cur = *l.Next
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("limit %d: listed %v, want %v", limit, got, want)
		}
	}
}

func TestListConversationsShowsCountersPreviewsMentionsAndLargeGroups(t *testing.T) {
	// above 2 members a group is large: "big" is from its founding
	s := readTestStore(t, 2)
	rs := newReadSeed(t, s)
	ctx := context.Background()
	rs.group("small", "bob", "ann")
	rs.say("small", group, "bob", "", "@ann look", "ann")
	last := rs.say("small", group, "bob", "", "and this")
	rs.group("big", "bob", "ann", "cid")
	rs.say("big", group, "cid", "", "big news")
	rs.say("dm", direct, "ann", "bob", "mine")
	if err := s.ApplyPreviews(ctx, latestOf(t, s, "small", last)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AckDevice(ctx, "ann", "phone", []redisstore.AckItem{{Conv: "small", Seq: 2, Epoch: 1}}, 1); err != nil {
		t.Fatal(err)
	}
	l, err := s.ListConversations(ctx, "ann", "phone", ListCursor{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, it := range l.Items {
		pv := "-"
		if it.Preview != nil {
			pv = fmt.Sprintf("%s:%q@%d", it.Preview.Sender, it.Preview.Text, it.Preview.Seq)
		}
		got += fmt.Sprintf("%s %s large=%v unread=%d last=%d mentions=%d acked=%d preview=%s\n",
			it.Conv, schemas.ConvTypeName(it.Type), it.Large, it.Unread, it.LastSeq, it.Mentions, it.Acked, pv)
	}
	want := fmt.Sprintf(`dm direct large=false unread=0 last=1 mentions=0 acked=0 preview=-
big group large=true unread=1 last=2 mentions=0 acked=0 preview=cid:"big news"@2
small group large=false unread=%d last=%d mentions=1 acked=2 preview=bob:"and this"@%d
`, last-1, last, last) // the founding join is no one's unread
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// latestOf reads back the conversation's entry of seq, as convindex gets it.
func latestOf(t *testing.T, s *rig, conv string, seq uint64) []*schemas.Sequenced {
	t.Helper()
	p, err := s.ReadPage(context.Background(), "bob", conv, PageQuery{HasAfter: true, After: seq - 1, Limit: 1})
	if err != nil || len(p.Messages) != 1 {
		t.Fatalf("read %s:%d: %v", conv, seq, err)
	}
	return p.Messages
}
