package rebuild

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/schemas"
)

// noticeGroup is a large group whose members joined one per record: its
// records as sequenced (the history a rebuild reads) and the seq each
// client_msg_id got.
type noticeGroup struct {
	t    *testing.T
	s    *rig
	conv string
	hist *rbHistory
	sent []*schemas.Message
}

func (g *noticeGroup) send(at time.Time, m *schemas.Message) uint64 {
	g.t.Helper()
	m.ConvId, m.ConvType = g.conv, schemas.ConvType_CONV_TYPE_GROUP
	res, err := g.s.Sequence(context.Background(), g.conv, []*schemas.Message{m}, nil, at.UnixMilli())
	if err != nil || res.Items[0].Status != redisstore.SeqNew {
		g.t.Fatalf("sequence %s: %+v (err %v)", m.GetClientMsgId(), res, err)
	}
	g.hist.add(res.Items[0].Sequenced)
	g.sent = append(g.sent, m)
	return res.Items[0].Sequenced.GetSeq()
}

// joins adds n users, each by a record of their own; leaves removes the
// first k of them, one record each.
func (g *noticeGroup) joins(at time.Time, tag string, n, k int) {
	for i := range n {
		g.send(at, &schemas.Message{ClientMsgId: fmt.Sprintf("%s-j%d", tag, i), Sender: "ann",
			Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{fmt.Sprintf("%s-u%d", tag, i)}})
	}
	for i := range k {
		u := fmt.Sprintf("%s-u%d", tag, i)
		g.send(at, &schemas.Message{ClientMsgId: fmt.Sprintf("%s-l%d", tag, i), Sender: u,
			Kind: schemas.Kind_KIND_MEMBER_LEAVE, Recipients: []string{u}})
	}
}

func (g *noticeGroup) say(at time.Time, tag string, n int) (last uint64) {
	for i := range n {
		last = g.send(at, &schemas.Message{ClientMsgId: fmt.Sprintf("%s-m%d", tag, i), Sender: "bob",
			Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain", Body: []byte("hello")})
	}
	return last
}

// unread is ann's unread in the group by the list and by sync, which
// must agree.
func (g *noticeGroup) unread() uint64 {
	g.t.Helper()
	ctx := context.Background()
	l, err := g.s.reads.ListConversations(ctx, "ann", "", readpath.ListCursor{}, 10)
	if err != nil || len(l.Items) != 1 || !l.Items[0].Large {
		g.t.Fatalf("list: %+v (err %v); want the one large group", l, err)
	}
	res, err := g.s.reads.Sync(ctx, syncReq("ann", "phone", 5, 1<<20))
	if err != nil {
		g.t.Fatal(err)
	}
	var synced uint64
	for _, c := range res.Convs {
		if c.Conv == g.conv {
			synced = c.Unread
		}
	}
	for _, c := range res.Summaries {
		if c.Conv == g.conv {
			synced = c.Unread
		}
	}
	if synced != l.Items[0].Unread {
		g.t.Fatalf("sync says unread %d, the list %d", synced, l.Items[0].Unread)
	}
	return synced
}

func TestLargeGroupUnreadLeavesOutJoinAndLeaveNotices(t *testing.T) {
	s := newRig(t, 5)
	ctx := context.Background()
	old := time.Now().Add(-40 * expDay)
	g := &noticeGroup{t: t, s: s, conv: "big", hist: &rbHistory{recs: map[string]map[uint64]*schemas.Sequenced{}}}
	g.send(old, &schemas.Message{ClientMsgId: "found", Sender: "ann", Kind: schemas.Kind_KIND_MEMBER_JOIN,
		Recipients: []string{"ann", "bob"}})
	// ann is a founder, in the large form as fanout leaves her (her
	// read seq rises only by her reads)
	s.rdb.HSet(ctx, s.keys.Inbox("ann"), redisstore.InboxField("big", redisstore.FieldType), string(redisstore.InboxLarge), redisstore.InboxField("big", redisstore.FieldJoined), 0)
	listLarge(t, s, "ann", "big")

	g.joins(old, "a", 40, 3)
	g.say(old, "a", 20)
	if got := g.unread(); got != 20 {
		t.Fatalf("unread %d after 43 join and leave records and 20 messages, want 20", got)
	}

	top := g.hist.recs["big"][uint64(len(g.hist.recs["big"]))].GetSeq()
	if _, err := s.ApplyReads(ctx, []redisstore.ReadMark{{User: "ann", Conv: "big", Seq: top}}); err != nil {
		t.Fatal(err)
	}
	if got := g.unread(); got != 0 {
		t.Fatalf("unread %d after reading everything, want 0", got)
	}

	recent := time.Now().Add(-time.Hour)
	g.joins(recent, "b", 10, 2)
	g.say(recent, "b", 3)
	if got := g.unread(); got != 3 {
		t.Fatalf("unread %d after 12 more notices and 3 messages, want 3", got)
	}
	replay := g.sent[len(g.sent)-15:]
	res, err := s.Sequence(ctx, "big", replay, nil, recent.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		if it.Status != redisstore.SeqDuplicate {
			t.Fatalf("replay: %+v, want every record a duplicate", it)
		}
	}
	if got := g.unread(); got != 3 {
		t.Fatalf("unread %d after a replay, want 3", got)
	}

	exp, err := s.ExpireConversation(ctx, "big", time.Now(), redisstore.Retention{}, 1000)
	if err != nil || exp.Timeline != 64 {
		t.Fatalf("expiry: %+v (err %v); want the 64 records of 40 days ago gone", exp, err)
	}
	if n, _ := s.rdb.ZCard(ctx, s.keys.Notices("big")).Result(); n != 12 {
		t.Fatalf("%d notice seqs left after expiry, want the 12 still in the timeline", n)
	}
	if got := g.unread(); got != 3 {
		t.Fatalf("unread %d after expiry, want 3", got)
	}

	kept, _ := s.rdb.ZRange(ctx, s.keys.Notices("big"), 0, -1).Result()
	if err := s.rdb.Del(ctx, s.keys.Timeline("big"), s.keys.Notices("big")).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rebuild(ctx, g.hist, "big", Options{Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.rdb.ZRange(ctx, s.keys.Notices("big"), 0, -1).Result(); fmt.Sprint(got) != fmt.Sprint(kept) {
		t.Fatalf("notice seqs after the rebuild %v, want %v", got, kept)
	}
	if got := g.unread(); got != 3 {
		t.Fatalf("unread %d after the rebuild, want 3", got)
	}
}
