package verify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// world is a store filled the way the pipeline fills it: records
// sequenced, then each member's inbox updated, acks and reads applied.
type world struct {
	t       *testing.T
	s       *redisstore.Store
	members map[string][]string
	now     time.Time
}

func newWorld(t *testing.T, rdb redis.UniversalClient, prefix string) *world {
	t.Helper()
	s, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix, LargeGroupThreshold: 3})
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, s: s, members: map[string][]string{}, now: time.Now()}
}

// send sequences one message and delivers it as the fanout does: the
// sender's own, a mention, or a plain delivery per member; large groups
// get writes only for the sender and the mentioned.
func (w *world) send(conv string, ct schemas.ConvType, sender string, mention []string) uint64 {
	w.t.Helper()
	ctx := context.Background()
	m := &schemas.Message{ClientMsgId: fmt.Sprintf("%s-%d", conv, time.Now().UnixNano()), ConvId: conv, ConvType: ct,
		Sender: sender, Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain", Body: []byte("hi"), Mentions: mention}
	if ct == schemas.ConvType_CONV_TYPE_DIRECT {
		for _, u := range w.members[conv] {
			if u != sender {
				m.Recipients = []string{u}
			}
		}
	}
	res, err := w.s.Sequence(ctx, conv, []*schemas.Message{m}, nil, w.now.UnixMilli())
	if err != nil || res.Items[0].Status != redisstore.SeqNew {
		w.t.Fatalf("sequence: %+v (err %v)", res, err)
	}
	seq := res.Items[0].Sequenced.Seq
	form := redisstore.InboxGroup
	switch {
	case ct == schemas.ConvType_CONV_TYPE_DIRECT:
		form = redisstore.InboxDirect
	case res.LargeFrom > 0:
		form = redisstore.InboxLarge
	}
	var ups []redisstore.InboxUpdate
	for _, u := range w.members[conv] {
		kind := redisstore.InboxDelivered
		switch {
		case u == sender:
			kind = redisstore.InboxOwn
		case slices.Contains(mention, u):
			kind = redisstore.InboxMentioned
		case form == redisstore.InboxLarge:
			continue
		}
		ev := []redisstore.InboxEvent{{Kind: kind, Seq: seq, WriteMS: w.now.UnixMilli()}}
		if form == redisstore.InboxLarge {
			ev = append([]redisstore.InboxEvent{{Kind: redisstore.InboxConvertLarge, Seq: seq}}, ev...)
		}
		ups = append(ups, redisstore.InboxUpdate{User: u, Conv: conv, Form: form, Epoch: res.Epoch, Events: ev})
	}
	if _, errs := w.s.ApplyInboxes(ctx, ups); slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
		w.t.Fatalf("apply inboxes: %v", errs)
	}
	return seq
}

func (w *world) group(conv string, founders ...string) {
	w.t.Helper()
	m := &schemas.Message{ClientMsgId: conv + "-found", ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: founders[0], Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: founders}
	res, err := w.s.Sequence(context.Background(), conv, []*schemas.Message{m}, nil, w.now.UnixMilli())
	if err != nil || res.Items[0].Status != redisstore.SeqNew {
		w.t.Fatalf("found %s: %+v (err %v)", conv, res, err)
	}
	w.members[conv] = founders
	form := redisstore.InboxGroup
	if res.LargeFrom > 0 {
		form = redisstore.InboxLarge
	}
	var ups []redisstore.InboxUpdate
	for _, u := range founders {
		ev := redisstore.InboxEvent{Kind: redisstore.InboxDelivered, Seq: 1, WriteMS: w.now.UnixMilli()}
		if u == founders[0] {
			ev.Kind = redisstore.InboxOwn
		}
		evs := []redisstore.InboxEvent{ev}
		if form == redisstore.InboxLarge {
			// Large: no deliveries, only the switch to the large form.
			evs = []redisstore.InboxEvent{{Kind: redisstore.InboxConvertLarge, Seq: 1}}
			if u == founders[0] {
				evs = append(evs, ev)
			}
		}
		ups = append(ups, redisstore.InboxUpdate{User: u, Conv: conv, Form: form, Epoch: res.Epoch, Events: evs})
	}
	if _, errs := w.s.ApplyInboxes(context.Background(), ups); slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
		w.t.Fatalf("apply inboxes: %v", errs)
	}
}

// healthy builds: a small group g1 (alice, bob, carol), a direct d1 (alice,
// bob), a large group big (4 founders over a threshold of 3), mentions,
// reads, and device acks.
func healthy(t *testing.T) *world {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	return fill(t, rdb, prefix)
}

func fill(t *testing.T, rdb redis.UniversalClient, prefix string) *world {
	t.Helper()
	w := newWorld(t, rdb, prefix)
	ctx := context.Background()
	w.group("g1", "alice", "bob", "carol")
	w.members["d1"] = []string{"alice", "bob"}
	w.group("big", "alice", "bob", "carol", "dave")
	w.send("g1", schemas.ConvType_CONV_TYPE_GROUP, "alice", []string{"bob"})
	w.send("g1", schemas.ConvType_CONV_TYPE_GROUP, "bob", nil)
	w.send("g1", schemas.ConvType_CONV_TYPE_GROUP, "carol", []string{"alice"})
	w.send("d1", schemas.ConvType_CONV_TYPE_DIRECT, "alice", nil)
	w.send("d1", schemas.ConvType_CONV_TYPE_DIRECT, "bob", nil)
	w.send("big", schemas.ConvType_CONV_TYPE_GROUP, "alice", []string{"dave"})
	w.send("big", schemas.ConvType_CONV_TYPE_GROUP, "bob", nil)
	if _, err := w.s.ApplyReads(ctx, []redisstore.ReadMark{{User: "carol", Conv: "g1", Seq: 2}}); err != nil {
		t.Fatal(err)
	}
	epoch, _ := rdb.HGet(ctx, w.s.Keys().ConvMeta("g1"), "epoch").Uint64()
	for _, dev := range []string{"phone", "laptop"} {
		if _, err := w.s.AckDevice(ctx, "bob", dev, []redisstore.AckItem{{Conv: "g1", Seq: 3, Epoch: epoch}}, w.now.UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func check(t *testing.T, main, hot *redisstore.Store) *Report {
	t.Helper()
	c, err := New(Config{ScanCount: 3, Chunk: 2}, main, hot)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestAHealthyStorePassesEveryCheck(t *testing.T) {
	w := healthy(t)
	rep := check(t, w.s, nil)
	if !rep.OK() {
		t.Fatalf("healthy store reported:\n%s", rep)
	}
	// carol's inbox holds only g1 and big, dave's only big.
	if rep.Conversations != 3 || rep.Users != 4 || rep.Cursors != 2 || rep.Mentions != 2 {
		t.Fatalf("checked %+v, want 3 conversations, 4 users, 2 cursors, 2 mentions", rep)
	}
	if !strings.Contains(rep.String(), "OK") {
		t.Fatalf("report of a healthy store:\n%s", rep)
	}
}

func TestExpiredDataIsNotAProblem(t *testing.T) {
	w := healthy(t)
	// Expiry ran far in the future: every timeline is empty, the mention
	// references now point below the floor.
	later := w.now.Add(60 * 24 * time.Hour)
	for _, c := range []string{"g1", "d1", "big"} {
		if _, err := w.s.ExpireConversation(context.Background(), c, later, redisstore.Retention{}, 100); err != nil {
			t.Fatal(err)
		}
	}
	if rep := check(t, w.s, nil); !rep.OK() {
		t.Fatalf("store after expiry reported:\n%s", rep)
	}
}

func TestEachBrokenInvariantIsReportedWhereItIs(t *testing.T) {
	type corrupt func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys)
	cases := []struct {
		name      string
		corrupt   corrupt
		kind      string
		conv, usr string
	}{
		{"a timeline entry holds the wrong seq", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			raw, _ := rdb.LIndex(ctx, k.Timeline("g1"), 3).Result()
			rdb.LSet(ctx, k.Timeline("g1"), 2, raw)
		}, KindTimeline, "g1", ""},
		{"a seq without its body", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.RPop(ctx, k.Timeline("d1"))
		}, KindTimeline, "d1", ""},
		{"an entry with an empty body", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.LSet(ctx, k.Timeline("d1"), 0, "1:5:")
		}, KindTimeline, "d1", ""},
		{"a timeline without meta", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.RPush(ctx, k.Timeline("ghost"), "1:5:x")
		}, KindTimeline, "ghost", ""},
		{"a member count that disagrees", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.HDel(ctx, k.Members("g1"), "carol")
		}, KindMembers, "g1", ""},
		{"a group without an owner", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.HDel(ctx, k.Roles("g1"), "alice")
		}, KindRoles, "g1", ""},
		{"a role held by a stranger", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.HSet(ctx, k.Roles("g1"), "zed", "a")
		}, KindRoles, "g1", "zed"},
		{"two owners", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.HSet(ctx, k.Roles("big"), "bob", "o")
		}, KindRoles, "big", ""},
		{"an own message above the read seq", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			// bob sent seq 3 but his read seq says 2 (his mention at 2 stays read).
			rdb.HSet(ctx, k.Inbox("bob"), redisstore.InboxField("g1", redisstore.FieldRead), 2)
		}, KindUnread, "g1", "bob"},
		{"an own message above a large group's read seq", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.HSet(ctx, k.Inbox("bob"), redisstore.InboxField("big", redisstore.FieldRead), 1)
		}, KindUnread, "big", "bob"},
		{"a mention beyond the counter", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.ZAdd(ctx, k.Mentions("carol"), redis.Z{Score: 1, Member: "g1:99"})
			rdb.ZAdd(ctx, k.MentionIndex("carol"), redis.Z{Score: 0, Member: "g1:99"}) // as the inbox script writes both
		}, KindMention, "g1", "carol"},
		{"a mention of a message that does not mention the user", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.ZAdd(ctx, k.Mentions("carol"), redis.Z{Score: 1, Member: "g1:3"})
			rdb.ZAdd(ctx, k.MentionIndex("carol"), redis.Z{Score: 0, Member: "g1:3"}) // as the inbox script writes both
		}, KindMention, "g1", "carol"},
		{"a mention in a conversation that does not exist", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.ZAdd(ctx, k.Mentions("carol"), redis.Z{Score: 1, Member: "nowhere:1"})
			rdb.ZAdd(ctx, k.MentionIndex("carol"), redis.Z{Score: 0, Member: "nowhere:1"}) // as the inbox script writes both
		}, KindMention, "nowhere", "carol"},
		{"an @all reference beyond the counter", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.ZAdd(ctx, k.MentionAll("big"), redis.Z{Score: 1, Member: "42"})
		}, KindMention, "big", ""},
		{"a cursor above the counter", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.HSet(ctx, k.Cursor("bob", "phone"), "g1", 9)
		}, KindCursor, "g1", "bob"},
		{"a cursor of an unregistered device", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.ZRem(ctx, k.Devices("bob"), "laptop")
		}, KindCursor, "", "bob"},
		{"more devices than allowed", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			for i := range 6 {
				rdb.ZAdd(ctx, k.Devices("dave"), redis.Z{Score: float64(i), Member: fmt.Sprint("d", i)})
			}
		}, KindDevices, "", "dave"},
		{"an inbox counting in an epoch after the conversation's", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			epoch, _ := rdb.HGet(ctx, k.ConvMeta("g1"), "epoch").Uint64()
			rdb.HSet(ctx, k.Inbox("carol"), redisstore.InboxField("g1", redisstore.FieldEpoch), epoch+1)
		}, KindInbox, "g1", "carol"},
		{"an inbox naming a missing conversation", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.HSet(ctx, k.Inbox("dave"), redisstore.InboxField("lost", redisstore.FieldLast), 1)
		}, KindInbox, "lost", "dave"},
		{"a large group missing from the large-group list", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.HSet(ctx, k.Inbox("bob"), redisstore.InboxLargeGroups, "\n")
		}, KindListIndex, "big", "bob"},
		{"a conversation a restore could not put back", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			if _, err := w.s.HoldConversation(ctx, "g1", "restore: test"); err != nil {
				panic(err)
			}
		}, KindHeld, "g1", ""},
		{"a pending mention missing from the lane and the list's count", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			// carol mentioned alice at g1:4, above alice's read seq
			rdb.ZRem(ctx, k.Mentions("alice"), "g1:4")
			rdb.ZRem(ctx, k.MentionIndex("alice"), "g1:4") // as an inbox update that dropped it
		}, KindMention, "g1", "alice"},
		{"a pending mention of a large group missing from the lane", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.ZRem(ctx, k.Mentions("dave"), "big:2")
			rdb.ZRem(ctx, k.MentionIndex("dave"), "big:2")
		}, KindMention, "big", "dave"},
		{"a mention index holding what the lane does not", func(ctx context.Context, w *world, rdb redis.UniversalClient, k redisstore.Keys) {
			rdb.ZAdd(ctx, k.MentionIndex("carol"), redis.Z{Score: 0, Member: "g1:2"})
		}, KindListIndex, "", "carol"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := healthy(t)
			tc.corrupt(context.Background(), w, w.s.Client(), w.s.Keys())
			rep := check(t, w.s, nil)
			if rep.OK() || len(rep.Problems) != 1 {
				t.Fatalf("want exactly one problem, got:\n%s", rep)
			}
			p := rep.Problems[0]
			if p.Kind != tc.kind || p.Conv != tc.conv || p.User != tc.usr {
				t.Fatalf("problem %+v, want kind %s conv %q user %q", p, tc.kind, tc.conv, tc.usr)
			}
			if s := rep.String(); !strings.Contains(s, "FAILED") || !strings.Contains(s, p.Detail) {
				t.Fatalf("report does not show the problem:\n%s", s)
			}
		})
	}
}

func TestUsersMovedToTheHotStoreAreCheckedThere(t *testing.T) {
	w := healthy(t)
	ctx := context.Background()
	hotClient := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t), DB: 1})
	t.Cleanup(func() { _ = hotClient.Close() })
	hot, err := redisstore.New(hotClient, redisstore.Config{Prefix: w.s.Keys().Prefix})
	if err != nil {
		t.Fatal(err)
	}
	router := redisstore.NewInboxRouter(w.s, hot, 0)
	if err := router.MoveToHot(ctx, "carol"); err != nil {
		t.Fatal(err)
	}
	// The stale main copy goes wrong; the live hot copy is sound.
	w.s.Client().HIncrBy(ctx, w.s.Keys().Inbox("carol"), redisstore.InboxField("g1", redisstore.FieldLast), 50)
	if rep := check(t, w.s, hot); !rep.OK() || rep.Users != 4 {
		t.Fatalf("after the move: want OK with 4 users, got:\n%s", rep)
	}
	hotClient.HIncrBy(ctx, hot.Keys().Inbox("carol"), redisstore.InboxField("g1", redisstore.FieldLast), 50)
	rep := check(t, w.s, hot)
	if len(rep.Problems) != 1 || rep.Problems[0].User != "carol" || rep.Problems[0].Kind != KindInbox {
		t.Fatalf("a broken hot copy: want one inbox problem for carol (last delivered above the counter), got:\n%s", rep)
	}
}

func TestAHealthyClusterPassesAndABrokenOneFails(t *testing.T) {
	rdb, prefix := testenv.RedisCluster(t)
	w := fill(t, rdb, prefix)
	if rep := check(t, w.s, nil); !rep.OK() || rep.Conversations != 3 || rep.Users != 4 {
		t.Fatalf("healthy cluster: want OK over 3 conversations and 4 users, got:\n%s", rep)
	}
	rdb.HSet(context.Background(), w.s.Keys().Cursor("bob", "phone"), "g1", 9)
	if rep := check(t, w.s, nil); len(rep.Problems) != 1 || rep.Problems[0].Kind != KindCursor {
		t.Fatalf("broken cluster: want one cursor problem, got:\n%s", rep)
	}
}
