package verify

import (
	"context"
	"github.com/offlinebox/offlinebox/redisstore/rebuild"
	"slices"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// The reported story: the history sink is 5 records behind when Redis
// loses a group's keys (its members' inboxes survive); the rebuild starts
// a new epoch at seq 40; bob then @mentions alice at the new seq 41, and
// the old 41..45 reach ClickHouse late.
func TestARebuildToANewEpochDeliversItsNewSeqsAndVerifiesClean(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	w := newWorld(t, rdb, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch, _ := testenv.History(t)
	g := schemas.ConvType_CONV_TYPE_GROUP
	w.group("g", "bob", "alice")
	for seq := 2; seq <= 42; seq++ {
		w.send("g", g, "bob", nil)
	}
	w.send("g", g, "alice", nil)             // 43: alice has read up to here
	w.send("g", g, "bob", []string{"alice"}) // 44
	if w.send("g", g, "bob", nil) != 45 {    // 45
		t.Fatal("the old epoch does not end at 45")
	}
	_, old, err := w.s.TimelineEntries(ctx, "g", 1, 45)
	if err != nil || len(old) != 45 {
		t.Fatalf("old timeline: %d entries, %v", len(old), err)
	}
	oldEpoch := old[0].Epoch
	if err := ch.InsertBatch(ctx, old[:40]); err != nil { // the sink is 5 behind
		t.Fatal(err)
	}
	keys, err := rdb.Keys(ctx, prefix+"{c:g}*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("conversation keys %v, %v", keys, err)
	}
	if err := rdb.Del(ctx, keys...).Err(); err != nil { // Redis loses the conversation
		t.Fatal(err)
	}
	res, err := rebuild.New(w.s).Rebuild(ctx, ch, "g", rebuild.Options{Now: w.now})
	if err != nil || res.Seq != 40 || !res.NewEpoch || res.Members != rebuild.MembersRestored {
		t.Fatalf("rebuild = %+v, %v; want a new epoch at 40 with the members", res, err)
	}
	if w.send("g", g, "bob", []string{"alice"}) != 41 { // bob's @alice at the new 41
		t.Fatal("the new epoch does not continue at 41")
	}
	w.send("g", g, "bob", nil) // 42
	_, fresh, err := w.s.TimelineEntries(ctx, "g", 41, 42)
	if err != nil || len(fresh) != 2 || fresh[0].Epoch != res.Epoch {
		t.Fatalf("new entries %v, %v; want 41, 42 of epoch %d", fresh, err, res.Epoch)
	}
	// The sink catches up: the new records, then the late old ones.
	if err := ch.InsertBatch(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if err := ch.InsertBatch(ctx, old[40:]); err != nil {
		t.Fatal(err)
	}

	in, err := w.s.ReadInbox(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if a := in.Convs["g"]; a.Last-a.Read != 2 || a.Last != 42 || a.Epoch != res.Epoch {
		t.Fatalf("alice's inbox %+v; want unread 2 (the new 41, 42) at 42 of epoch %d", a, res.Epoch)
	}
	_, lane, err := w.s.ReadMentionLane(ctx, "alice")
	if err != nil || !slices.Equal(lane, []string{"g:41"}) {
		t.Fatalf("alice's mention lane %v, %v; want [g:41]", lane, err)
	}
	if rep := check(t, w.s, nil); !rep.OK() {
		t.Fatalf("verify after the rebuild:\n%s", rep)
	}

	// A replay of the old epoch's records (a retried batch of 44, 45)
	// changes nothing.
	replay := redisstore.InboxUpdate{User: "alice", Conv: "g", Form: redisstore.InboxGroup, Epoch: oldEpoch, Events: []redisstore.InboxEvent{
		{Kind: redisstore.InboxMentioned, Seq: 44, WriteMS: old[43].WriteTimeMs},
		{Kind: redisstore.InboxDelivered, Seq: 45, WriteMS: old[44].WriteTimeMs},
	}}
	if outs, errs := w.s.ApplyInboxes(ctx, []redisstore.InboxUpdate{replay}); errs[0] != nil || outs[0] != redisstore.InboxReplayed {
		t.Fatalf("old-epoch replay: %v, %v; want a replay", outs[0], errs[0])
	}
	after, _ := w.s.ReadInbox(ctx, "alice")
	_, laneAfter, _ := w.s.ReadMentionLane(ctx, "alice")
	if after.Convs["g"] != in.Convs["g"] || !slices.Equal(laneAfter, lane) {
		t.Fatalf("old-epoch replay changed alice's inbox: %+v lane %v", after.Convs["g"], laneAfter)
	}
	if rep := check(t, w.s, nil); !rep.OK() {
		t.Fatalf("verify after the old-epoch replay:\n%s", rep)
	}

	// Each epoch's history holds its own messages, none hidden.
	for epoch, want := range map[uint64][]*schemas.Sequenced{
		oldEpoch:  old,
		res.Epoch: append(slices.Clone(old[:40]), fresh...),
	} {
		page, more, err := ch.History(ctx, "g", epoch, 0, 200)
		if err != nil || more || len(page) != len(want) {
			t.Fatalf("history of epoch %d: %d messages, more %v, %v; want %d", epoch, len(page), more, err, len(want))
		}
		for i, m := range page {
			if m.GetMessage().GetClientMsgId() != want[i].GetMessage().GetClientMsgId() || m.Seq != want[i].Seq || m.Epoch != epoch {
				t.Fatalf("history of epoch %d, seq %d = %s@%d, want %s", epoch, m.Seq,
					m.GetMessage().GetClientMsgId(), m.Epoch, want[i].GetMessage().GetClientMsgId())
			}
		}
	}
}
