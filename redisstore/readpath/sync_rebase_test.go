package readpath

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/offlinebox/offlinebox/redisstore"
)

func TestSyncKeepsTheAnswerWithinTheByteBudget(t *testing.T) {
	s := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	big := strings.Repeat("x", 900)
	for _, c := range []string{"g1", "g2", "g3"} {
		rs.group(c, "bob", "ann")
		for range 8 {
			rs.say(c, group, "bob", "", big)
		}
	}
	rs.say("dm", direct, "bob", "ann", "short")
	const budget = 4000
	res, err := s.Sync(context.Background(), syncReq("ann", "phone", 50, budget))
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes > budget {
		t.Fatalf("answer of %d bytes over the budget of %d:\n%s", res.Bytes, budget, render(res))
	}
	// The direct conversation is small and first, whole; then the groups
	// by activity, each cut to its newest messages (no group fits whole),
	// while the budget lasts; the others are summaries to ask for next.
	if res.Convs[0].Conv != "dm" || res.Convs[0].HasMore || len(res.Convs) < 2 || len(res.Convs)+len(res.Summaries) != 4 {
		t.Fatalf("unexpected shape:\n%s", render(res))
	}
	checkNewestWithGap(t, res, res.Convs[1:], "g3", "g2", "g1")
	// Asked again with the direct conversation held, the most recent group
	// comes first and is cut to its newest messages, with a gap.
	req := syncReq("ann", "phone", 50, budget)
	req.Cursors["dm"] = redisstore.Position{Seq: 1, Epoch: res.Convs[0].Epoch}
	if res, err = s.Sync(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if res.Bytes > budget || len(res.Convs)+len(res.Summaries) != 3 {
		t.Fatalf("unexpected shape:\n%s", render(res))
	}
	checkNewestWithGap(t, res, res.Convs, "g3", "g2", "g1")
	// A budget too small for anything still delivers the first newest message.
	res, err = s.Sync(context.Background(), syncReq("ann", "phone", 50, 300))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Convs) != 1 || len(res.Convs[0].Messages) != 1 {
		t.Fatalf("tiny budget made no progress:\n%s", render(res))
	}
}

// checkNewestWithGap: convs are the first of order, in that order, each
// holding its newest messages with a gap that meets them.
func checkNewestWithGap(t *testing.T, res *SyncResult, convs []SyncConv, order ...string) {
	t.Helper()
	for i, g := range convs {
		if g.Conv != order[i] || g.Gap == nil || g.Gap.From != 1 || g.Gap.To+1 != g.Messages[0].Seq ||
			g.Messages[len(g.Messages)-1].Seq != g.MaxSeq {
			t.Fatalf("%s is not answered in order with its newest messages and a gap that meets them:\n%s", g.Conv, render(res))
		}
	}
}

// A rebase means one thing: the cursor is meaningless to the answer's
// timeline (another epoch, beyond the counter, an evicted device). A
// cursor that is only far behind, by a long backlog or below the Redis
// window, is continued: the gap starts right above it, marked incomplete
// when part of it is in history only.
func TestSyncRebasesOnlyCursorsThatMeanNothingAndNamesTheGapOfTheFarBehind(t *testing.T) {
	s := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	rs.group("g", "bob", "ann")
	for i := range 20 {
		rs.say("g", group, "bob", "", fmt.Sprint(i))
	}
	ctx := context.Background()
	epoch := s.rdb.HGet(ctx, s.keys.ConvMeta("g"), "epoch").Val()
	var e uint64
	fmt.Sscan(epoch, &e)
	cases := []struct {
		name       string
		cur        redisstore.Position
		pop        int
		reason     string
		incomplete bool
		gap        *SeqRange
	}{
		{"continues", redisstore.Position{Seq: 17, Epoch: e}, 0, "", false, nil},
		{"continues with gap", redisstore.Position{Seq: 11, Epoch: e}, 0, "", false, &SeqRange{12, 17}},
		{"far behind keeps the cursor", redisstore.Position{Seq: 2, Epoch: e}, 0, "", false, &SeqRange{3, 17}},
		{"other epoch", redisstore.Position{Seq: 15, Epoch: e + 1}, 0, RebaseEpoch, false, nil},
		{"cursor ahead", redisstore.Position{Seq: 99, Epoch: e}, 0, RebaseAhead, false, nil},
		{"older than the window keeps the cursor", redisstore.Position{Seq: 2, Epoch: e}, 5, "", true, &SeqRange{3, 17}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.pop > 0 {
				popHead(t, s, "g", tc.pop)
			}
			req := syncReq("ann", "phone", 4, 64<<10)
			req.Cursors["g"] = tc.cur
			res, err := s.Sync(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Convs) != 1 {
				t.Fatalf("want one conversation:\n%s", render(res))
			}
			c := res.Convs[0]
			gapOK := (c.Gap == nil) == (tc.gap == nil) && (c.Gap == nil || *c.Gap == *tc.gap)
			if c.RebaseReason != tc.reason || c.Rebase != (tc.reason != "") || c.Incomplete != tc.incomplete || !gapOK {
				t.Fatalf("got\n%s", render(res))
			}
			if fmt.Sprint(seqsOf(c.Messages)) != "[18 19 20 21]" {
				t.Fatalf("want the newest 4:\n%s", render(res))
			}
		})
	}
}

func TestSyncTellsAnEvictedDeviceToResync(t *testing.T) {
	s := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	rs.group("g", "bob", "ann")
	rs.say("g", group, "bob", "", "one")
	ctx := context.Background()
	for i := range 6 {
		if _, err := s.AckDevice(ctx, "ann", fmt.Sprint("dev", i), []redisstore.AckItem{{Conv: "g", Seq: 2, Epoch: 1}}, int64(1000+i)); err != nil {
			t.Fatal(err)
		}
	}
	req := syncReq("ann", "dev0", 10, 64<<10)
	req.Cursors["g"] = redisstore.Position{Seq: 2, Epoch: 1}
	res, err := s.Sync(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resync || len(res.Convs) != 1 || res.Convs[0].RebaseReason != RebaseResync {
		t.Fatalf("evicted device:\n%s", render(res))
	}
	req.Device = "dev5"
	if res, err = s.Sync(ctx, req); err != nil || res.Resync {
		t.Fatalf("kept device told to resync: %v\n%s", err, render(res))
	}
}

func TestSyncDerivesLargeGroupsFromTheGroup(t *testing.T) {
	s := readTestStore(t, 2)
	rs := newReadSeed(t, s)
	rs.group("big", "bob", "ann", "cid")
	rs.say("big", group, "bob", "", "hello")
	all := &rsAll{rs}
	allSeq := all.sayAll("big", "bob", "everyone!")
	rs.say("big", group, "cid", "", "after")
	ctx := context.Background()
	// A slice of the newest message only: the @all is the lane's.
	res, err := s.Sync(ctx, syncReq("ann", "phone", 1, 64<<10))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Mentions) != 1 || !res.Mentions[0].All || res.Mentions[0].Message.Seq != allSeq {
		t.Fatalf("@all of a large group not pending:\n%s", render(res))
	}
	if len(res.Convs) != 1 || !res.Convs[0].Large || res.Convs[0].Unread != res.Convs[0].MaxSeq-1 {
		// every seq but the founding join
		t.Fatalf("large group counters:\n%s", render(res))
	}
	if _, err := s.ApplyReads(ctx, []redisstore.ReadMark{{User: "ann", Conv: "big", Seq: allSeq}}); err != nil {
		t.Fatal(err)
	}
	res, err = s.Sync(ctx, syncReq("ann", "phone", 1, 64<<10))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Mentions) != 0 || res.Convs[0].Unread != res.Convs[0].MaxSeq-allSeq {
		t.Fatalf("after reading the @all:\n%s", render(res))
	}
}

type rsAll struct{ *readSeed }

func (rs *rsAll) sayAll(conv, sender, body string) uint64 {
	m := groupText(conv, sender, body)
	m.MentionAll = true
	return rs.send(m)
}

// A device that syncs is in use even when it has nothing new to ack:
// the sixth device's ack evicts the one that stopped pulling, not the
// one that acked longest ago but still syncs.
func TestSyncMarksTheDeviceUsedSoAnActiveDeviceIsNotEvicted(t *testing.T) {
	s := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	rs.group("g", "bob", "ann")
	rs.say("g", group, "bob", "", "one")
	ctx := context.Background()
	for i := range 5 {
		if _, err := s.AckDevice(ctx, "ann", fmt.Sprint("dev", i), []redisstore.AckItem{{Conv: "g", Seq: 2, Epoch: 1}}, int64(1000+i)); err != nil {
			t.Fatal(err)
		}
	}
	req := syncReq("ann", "dev0", 10, 64<<10)
	req.NowMS = 2000
	if _, err := s.Sync(ctx, req); err != nil {
		t.Fatal(err)
	}
	res, err := s.AckDevice(ctx, "ann", "dev5", []redisstore.AckItem{{Conv: "g", Seq: 2, Epoch: 1}}, 3000)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Evicted) != 1 || res.Evicted[0] != "dev1" {
		t.Fatalf("the sixth device evicted %v, want [dev1] (dev0 synced at 2000)", res.Evicted)
	}
	if res, err := s.Sync(ctx, req); err != nil || res.Resync {
		t.Fatalf("the syncing device was evicted: %v resync %v", err, res != nil && res.Resync)
	}
	// A sync does not register a device it does not know.
	req.Device, req.NowMS = "stranger", 4000
	if _, err := s.Sync(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := s.rdb.ZCard(ctx, s.keys.Devices("ann")).Val(); n != 5 {
		t.Errorf("%d devices registered after a stranger's sync, want 5", n)
	}
}
