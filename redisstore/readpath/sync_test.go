package readpath

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/schemas"

	"github.com/offlinebox/offlinebox/redisstore"
)

// testSizer charges the protobuf size of a message plus a fixed overhead.
type testSizer struct{}

func (testSizer) Envelope() int                    { return 100 }
func (testSizer) Mention(m SyncMention) int        { return proto.Size(m.Message) + 60 }
func (testSizer) Conv(*SyncConv) int               { return 120 }
func (testSizer) Message(m *schemas.Sequenced) int { return proto.Size(m) + 40 }
func (testSizer) Summary(SyncSummary) int          { return 100 }

func syncReq(user, device string, limit, budget int) SyncRequest {
	return SyncRequest{User: user, Device: device, Limit: limit, MaxBytes: budget, Sizer: testSizer{}, Cursors: map[string]redisstore.Position{}}
}

func seqsOf(ms []*schemas.Sequenced) []uint64 {
	out := make([]uint64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}

// render prints a sync answer compactly, for comparisons and messages.
func render(r *SyncResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "resync=%v\n", r.Resync)
	for _, m := range r.Mentions {
		fmt.Fprintf(&b, "mention %s:%d all=%v %q\n", m.Conv, m.Message.Seq, m.All, m.Message.GetMessage().GetBody())
	}
	for _, c := range r.Convs {
		fmt.Fprintf(&b, "conv %s %s large=%v max=%d unread=%d more=%v gap=%v rebase=%q incomplete=%v seqs=%v\n",
			c.Conv, schemas.ConvTypeName(c.Type), c.Large, c.MaxSeq, c.Unread, c.HasMore, c.Gap, c.RebaseReason, c.Incomplete, seqsOf(c.Messages))
	}
	for _, s := range r.Summaries {
		fmt.Fprintf(&b, "summary %s max=%d unread=%d mentions=%d\n", s.Conv, s.MaxSeq, s.Unread, s.Mentions)
	}
	fmt.Fprintf(&b, "omitted=%d\n", r.Omitted)
	return b.String()
}

func TestReadPageWalksTheWindowAndRefusesStrangers(t *testing.T) {
	s := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	rs.group("g", "ann", "bob")
	for i := range 9 {
		rs.say("g", group, "bob", "", fmt.Sprint("m", i))
	}
	ctx := context.Background()
	cases := []struct {
		name string
		q    PageQuery
		want []uint64
		more bool
	}{
		{"oldest after 0", PageQuery{HasAfter: true, After: 0, Limit: 4}, []uint64{1, 2, 3, 4}, true},
		{"after 4", PageQuery{HasAfter: true, After: 4, Limit: 4}, []uint64{5, 6, 7, 8}, true},
		{"after 8", PageQuery{HasAfter: true, After: 8, Limit: 4}, []uint64{9, 10}, false},
		{"after and before", PageQuery{HasAfter: true, After: 2, Before: 6, Limit: 10}, []uint64{3, 4, 5}, false},
		{"newest", PageQuery{Limit: 3}, []uint64{8, 9, 10}, true},
		{"newest before 5", PageQuery{Before: 5, Limit: 3}, []uint64{2, 3, 4}, true},
		{"beyond the end", PageQuery{HasAfter: true, After: 10, Limit: 3}, []uint64{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := s.ReadPage(ctx, "ann", "g", tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(seqsOf(p.Messages)); got != fmt.Sprint(tc.want) || p.HasMore != tc.more {
				t.Fatalf("got %s more=%v, want %v more=%v", got, p.HasMore, tc.want, tc.more)
			}
			if p.MaxSeq != 10 || p.Incomplete {
				t.Fatalf("max seq %d incomplete %v", p.MaxSeq, p.Incomplete)
			}
		})
	}
	if _, err := s.ReadPage(ctx, "eve", "g", PageQuery{Limit: 5}); !errors.Is(err, ErrNotMember) {
		t.Fatalf("stranger read: %v, want ErrNotMember", err)
	}
	if _, err := s.ReadPage(ctx, "ann", "g", PageQuery{Limit: 5, Epoch: 1}); !errors.Is(err, ErrEpochChanged) {
		t.Fatalf("other epoch: %v, want ErrEpochChanged", err)
	}
	popHead(t, s, "g", 4)
	p, err := s.ReadPage(ctx, "ann", "g", PageQuery{HasAfter: true, After: 1, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seqsOf(p.Messages)) != "[5 6 7]" || !p.Incomplete || p.First != 5 {
		t.Fatalf("after expiry: seqs %v incomplete %v first %d", seqsOf(p.Messages), p.Incomplete, p.First)
	}
}

// popHead removes n entries from the timeline's head as expiry does.
func popHead(t *testing.T, s *rig, conv string, n int) {
	t.Helper()
	ctx := context.Background()
	if err := s.rdb.LPopCount(ctx, s.keys.Timeline(conv), n).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.HIncrBy(ctx, s.keys.ConvMeta(conv), "first", int64(n)).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestSyncPutsMentionsFirstThenSlicesByPriority(t *testing.T) {
	s := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	rs.group("noisy", "bob", "ann", "cid")
	rs.group("quiet", "cid", "ann")
	rs.say("quiet", group, "cid", "", "hi")
	m1 := rs.say("noisy", group, "bob", "", "early @ann", "ann")
	for i := range 30 {
		rs.say("noisy", group, "cid", "", fmt.Sprint("chatter ", i))
	}
	m2 := rs.say("noisy", group, "bob", "", "second @ann", "ann")
	for i := range 10 {
		rs.say("noisy", group, "cid", "", fmt.Sprint("more ", i))
	}
	rs.say("dm", direct, "bob", "ann", "psst")
	rs.say("quiet", group, "cid", "", "latest")

	res, err := s.Sync(context.Background(), syncReq("ann", "phone", 5, 64<<10))
	if err != nil {
		t.Fatal(err)
	}
	// The groups' founding joins are no one's unread; the lane is newest
	// first.
	want := fmt.Sprintf(`resync=false
mention noisy:%d all=false "second @ann"
mention noisy:%d all=false "early @ann"
conv noisy group large=false max=43 unread=42 more=true gap=&{1 38} rebase="" incomplete=false seqs=[39 40 41 42 43]
conv dm direct large=false max=1 unread=1 more=false gap=<nil> rebase="" incomplete=false seqs=[1]
conv quiet group large=false max=3 unread=2 more=false gap=<nil> rebase="" incomplete=false seqs=[1 2 3]
omitted=0
`, m2, m1)
	if got := render(res); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	again, err := s.Sync(context.Background(), syncReq("ann", "phone", 5, 64<<10))
	if err != nil {
		t.Fatal(err)
	}
	if render(again) != render(res) {
		t.Fatalf("repeated request answered differently:\n%s\nthen\n%s", render(res), render(again))
	}
	// With cursors past the first mention, only the second is pending.
	req := syncReq("ann", "phone", 5, 64<<10)
	req.Cursors["noisy"] = redisstore.Position{Seq: m1, Epoch: res.Convs[0].Epoch}
	res, err = s.Sync(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Mentions) != 1 || res.Mentions[0].Message.Seq != m2 {
		t.Fatalf("mentions above the cursor: %s", render(res))
	}
	if g := res.Convs[0].Gap; g == nil || g.From != m1+1 || g.To != 38 {
		t.Fatalf("gap from the cursor: %s", render(res))
	}
}

func TestReadPathFollowsAUserMovedToTheHotStore(t *testing.T) {
	s := readTestStore(t, 100)
	hot := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	rs.group("g", "bob", "ann")
	seq := rs.say("g", group, "bob", "", "@ann", "ann")
	// A newer message, and slices of one, keep the mention in the lane
	// (a slice that carries a mention is not repeated there).
	rs.say("g", group, "bob", "", "more")
	ctx := context.Background()
	router := redisstore.NewInboxRouter(s.Store, hot.Store, 0)
	reads := New(router)
	if err := router.MoveToHot(ctx, "ann"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sync(ctx, syncReq("ann", "phone", 10, 64<<10)); !errors.Is(err, redisstore.ErrUserMoved) {
		t.Fatalf("sync on the stale store: %v, want ErrUserMoved", err)
	}
	if _, err := s.ListConversations(ctx, "ann", "", ListCursor{}, 10); !errors.Is(err, redisstore.ErrUserMoved) {
		t.Fatalf("list on the stale store: %v, want ErrUserMoved", err)
	}
	if _, err := s.AckDevice(ctx, "ann", "phone", []redisstore.AckItem{{Conv: "g", Seq: 1, Epoch: 1}}, 1); !errors.Is(err, redisstore.ErrUserMoved) {
		t.Fatalf("ack on the stale store: %v, want ErrUserMoved", err)
	}
	if _, err := s.ApplyReads(ctx, []redisstore.ReadMark{{User: "ann", Conv: "g", Seq: 1}}); !errors.Is(err, redisstore.ErrUserMoved) {
		t.Fatalf("read on the stale store: %v, want ErrUserMoved", err)
	}
	res, err := reads.Sync(ctx, syncReq("ann", "phone", 1, 64<<10))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Mentions) != 1 || res.Mentions[0].Message.Seq != seq || len(res.Convs) != 1 {
		t.Fatalf("sync through the router:\n%s", render(res))
	}
	l, err := reads.ListConversations(ctx, "ann", "", ListCursor{}, 10)
	if err != nil || len(l.Items) != 1 || l.Items[0].Mentions != 1 {
		t.Fatalf("list through the router: %+v, %v", l, err)
	}
}
