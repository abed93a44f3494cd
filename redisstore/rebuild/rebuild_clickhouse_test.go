package rebuild_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/rebuild"
	"github.com/offlinebox/offlinebox/schemas"
)

// convState is every conversation key a rebuild restores, epoch aside.
type convState struct {
	meta       map[string]string
	timeline   []string
	members    map[string]string
	mentionAll []string
	epoch      string
}

func readConv(t *testing.T, s *redisstore.Store, conv string) convState {
	t.Helper()
	ctx := context.Background()
	rdb, k := s.Client(), s.Keys()
	var st convState
	st.meta, _ = rdb.HGetAll(ctx, k.ConvMeta(conv)).Result()
	st.epoch = st.meta["epoch"]
	delete(st.meta, "epoch")
	st.timeline, _ = rdb.LRange(ctx, k.Timeline(conv), 0, -1).Result()
	st.members, _ = rdb.HGetAll(ctx, k.Members(conv)).Result()
	st.mentionAll, _ = rdb.ZRange(ctx, k.MentionAll(conv), 0, -1).Result()
	return st
}

// sequenceLife sequences a group's and a direct conversation's records
// through the real script, at ages before now, and returns what the fanout
// published for them.
func sequenceLife(ctx context.Context, t *testing.T, rs *redisstore.Store, now time.Time) []*schemas.Sequenced {
	t.Helper()
	g, d := schemas.ConvType_CONV_TYPE_GROUP, schemas.ConvType_CONV_TYPE_DIRECT
	type rec struct {
		conv  string
		ct    schemas.ConvType
		kind  schemas.Kind
		users []string
		age   time.Duration
	}
	day := 24 * time.Hour
	recs := []rec{
		{"g1", g, schemas.Kind_KIND_MEMBER_JOIN, []string{"alice", "bob", "carol"}, 45 * day},
		{"g1", g, schemas.Kind_KIND_MESSAGE, nil, 33 * day},
		{"g1", g, schemas.Kind_KIND_MEMBER_JOIN, []string{"dave", "erin"}, 20 * day},
		{"g1", g, schemas.Kind_KIND_MESSAGE, nil, 6 * day},
		{"g1", g, schemas.Kind_KIND_MEMBER_LEAVE, []string{"carol"}, 3 * day},
		{"g1", g, schemas.Kind_KIND_MESSAGE, nil, time.Hour},
		{"d1", d, schemas.Kind_KIND_MESSAGE, []string{"bob"}, 40 * day},
		{"d1", d, schemas.Kind_KIND_MESSAGE, []string{"bob"}, 2 * day},
	}
	var published []*schemas.Sequenced
	for i, r := range recs {
		m := &schemas.Message{ClientMsgId: fmt.Sprint("cm", i), ConvId: r.conv, ConvType: r.ct, Sender: "alice",
			Recipients: r.users, Kind: r.kind, ContentType: "text/plain", Body: fmt.Appendf(nil, "body %d", i),
			Mentions: []string{"bob"}, MentionAll: i == 3, SendTimeMs: now.Add(-r.age).UnixMilli() - 7}
		res, err := rs.Sequence(ctx, r.conv, []*schemas.Message{m}, nil, now.Add(-r.age).UnixMilli())
		if err != nil || res.Items[0].Status != redisstore.SeqNew {
			t.Fatalf("sequence record %d: %+v (err %v)", i, res, err)
		}
		published = append(published, res.Items[0].Sequenced)
	}
	return published
}

func TestRebuildAllFromClickHouseRestoresEveryConversationAfterARedisLoss(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	rs, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix, LargeGroupThreshold: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch, _ := testenv.History(t)
	now := time.Now()
	published := sequenceLife(ctx, t, rs, now)
	// The history sink stored what the fanout published; expiry then ran.
	if err := ch.InsertBatch(ctx, published); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"g1", "d1"} {
		if _, err := rs.ExpireConversation(ctx, c, now, redisstore.Retention{}, 100); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string]convState{"g1": readConv(t, rs, "g1"), "d1": readConv(t, rs, "d1")}
	if len(before["g1"].timeline) != 4 || len(before["d1"].timeline) != 1 || len(before["g1"].mentionAll) != 1 {
		t.Fatalf("seeded timelines g1 %d, d1 %d, @all %d; want 4, 1, 1",
			len(before["g1"].timeline), len(before["d1"].timeline), len(before["g1"].mentionAll))
	}

	keys, _ := rdb.Keys(ctx, prefix+"*").Result()
	if err := rdb.Del(ctx, keys...).Err(); err != nil { // Redis is lost
		t.Fatal(err)
	}
	var results []rebuild.Result
	n, err := rebuild.New(rs).RebuildAll(ctx, ch, ch, rebuild.Options{Now: now}, func(r rebuild.Result, err error) {
		if err != nil {
			t.Errorf("rebuild %s: %v", r.Conv, err)
		}
		results = append(results, r)
	})
	if err != nil || n != 2 {
		t.Fatalf("rebuilt %d conversations (err %v), want 2", n, err)
	}
	for conv, b := range before {
		a := readConv(t, rs, conv)
		if !slices.Equal(a.timeline, b.timeline) {
			t.Fatalf("%s: rebuilt timeline of %d entries differs from the original %d", conv, len(a.timeline), len(b.timeline))
		}
		if !maps.Equal(a.meta, b.meta) || !maps.Equal(a.members, b.members) || !slices.Equal(a.mentionAll, b.mentionAll) {
			t.Fatalf("%s: rebuilt meta %v members %v @all %v\nwant %v %v %v", conv, a.meta, a.members, a.mentionAll, b.meta, b.members, b.mentionAll)
		}
		if a.epoch <= b.epoch {
			t.Fatalf("%s: epoch %s after the loss, want one above %s", conv, a.epoch, b.epoch)
		}
	}
	for _, r := range results {
		if r.Members != rebuild.MembersRestored || !r.NewEpoch {
			t.Fatalf("%s: %+v, want members restored and a new epoch", r.Conv, r)
		}
	}
}

func TestRebuildFromClickHouseWritesEntriesOfEveryStoredQoSByteForByte(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	rs, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch, _ := testenv.History(t)
	now := time.Now()
	var published []*schemas.Sequenced
	for i, q := range []schemas.QoS{schemas.QoS_QOS_AT_LEAST_ONCE, schemas.QoS_QOS_UNSPECIFIED, schemas.QoS_QOS_AT_LEAST_ONCE} {
		m := &schemas.Message{ClientMsgId: fmt.Sprint("q", i), ConvId: "d1", ConvType: schemas.ConvType_CONV_TYPE_DIRECT,
			Sender: "alice", Recipients: []string{"bob"}, Kind: schemas.Kind_KIND_MESSAGE, Qos: q,
			ContentType: "text/plain", Body: fmt.Appendf(nil, "body %d", i), SendTimeMs: now.UnixMilli() - 9}
		res, err := rs.Sequence(ctx, "d1", []*schemas.Message{m}, nil, now.UnixMilli()+int64(i))
		if err != nil || res.Items[0].Status != redisstore.SeqNew {
			t.Fatalf("sequence record %d: %+v (err %v)", i, res, err)
		}
		published = append(published, res.Items[0].Sequenced)
	}
	if err := ch.InsertBatch(ctx, published); err != nil {
		t.Fatal(err)
	}
	before := readConv(t, rs, "d1")
	keys, _ := rdb.Keys(ctx, prefix+"*").Result()
	if err := rdb.Del(ctx, keys...).Err(); err != nil { // Redis is lost
		t.Fatal(err)
	}
	if _, err := rebuild.New(rs).Rebuild(ctx, ch, "d1", rebuild.Options{Now: now}); err != nil {
		t.Fatal(err)
	}
	after := readConv(t, rs, "d1")
	if len(before.timeline) != 3 || !slices.Equal(after.timeline, before.timeline) {
		t.Fatalf("rebuilt timeline\n%q\nwant the entries sequencing wrote\n%q", after.timeline, before.timeline)
	}
}

// epochRig is a Redis store and a migrated ClickHouse history, with send
// sequencing n records of group "g" (the first of tag "old" founds it).
type epochRig struct {
	rdb    redis.UniversalClient
	prefix string
	rs     *redisstore.Store
	ch     *chstore.Store
	now    time.Time
}

func newEpochRig(t *testing.T) *epochRig {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	rs, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := testenv.History(t)
	return &epochRig{rdb: rdb, prefix: prefix, rs: rs, ch: ch, now: time.Now()}
}

func (r *epochRig) send(ctx context.Context, t *testing.T, n int, tag string) []*schemas.Sequenced {
	t.Helper()
	var out []*schemas.Sequenced
	for i := range n {
		m := &schemas.Message{ClientMsgId: fmt.Sprint(tag, i), ConvId: "g", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
			Sender: "bob", Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain", Body: fmt.Appendf(nil, "%s %d", tag, i)}
		if len(out) == 0 && tag == "old" {
			m.Kind, m.Recipients = schemas.Kind_KIND_MEMBER_JOIN, []string{"bob", "alice"}
		}
		res, err := r.rs.Sequence(ctx, "g", []*schemas.Message{m}, nil, r.now.UnixMilli())
		if err != nil || res.Items[0].Status != redisstore.SeqNew {
			t.Fatalf("sequence %s %d: %+v (err %v)", tag, i, res, err)
		}
		out = append(out, res.Items[0].Sequenced)
	}
	return out
}

// lose deletes the conversation's keys, as a Redis loss would.
func (r *epochRig) lose(ctx context.Context, t *testing.T) {
	t.Helper()
	keys, _ := r.rdb.Keys(ctx, r.prefix+"{c:g}*").Result()
	if err := r.rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestRebuildReadsTheEpochItContinuesAndRecordsWhereTheNewOneStarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := newEpochRig(t)
	rs, ch := r.rs, r.ch
	old := r.send(ctx, t, 45, "old")
	if err := ch.InsertBatch(ctx, old[:40]); err != nil { // the sink is 5 behind
		t.Fatal(err)
	}
	r.lose(ctx, t)
	r2, err := rebuild.New(rs).Rebuild(ctx, ch, "g", rebuild.Options{Now: r.now})
	if err != nil || r2.Seq != 40 || !r2.NewEpoch {
		t.Fatalf("first rebuild %+v, %v; want a new epoch at 40", r2, err)
	}
	fresh := r.send(ctx, t, 2, "new")
	if err := ch.InsertBatch(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if err := ch.InsertBatch(ctx, old[40:]); err != nil { // the old rows arrive late
		t.Fatal(err)
	}
	before := readConv(t, rs, "g")

	// Lost again: the rebuild continues the newest epoch, whose 41 and 42
	// are the new messages, not the old epoch's late rows.
	r.lose(ctx, t)
	r3, err := rebuild.New(rs).Rebuild(ctx, ch, "g", rebuild.Options{Now: r.now})
	if err != nil || r3.Seq != 42 || !r3.NewEpoch || r3.Epoch <= r2.Epoch {
		t.Fatalf("second rebuild %+v, %v; want a newer epoch at 42", r3, err)
	}
	after := readConv(t, rs, "g")
	if !slices.Equal(after.timeline, before.timeline) {
		t.Fatalf("rebuilt timeline\n%q\nwant the one the second epoch held\n%q", after.timeline, before.timeline)
	}
	lin, err := ch.Lineage(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]chstore.EpochOrigin{
		r2.Epoch: {Epoch: r2.Epoch, Parent: old[0].Epoch, Base: 40},
		r3.Epoch: {Epoch: r3.Epoch, Parent: r2.Epoch, Base: 42},
	}
	if !maps.Equal(lin, want) {
		t.Fatalf("lineage %v, want %v", lin, want)
	}
}

// racingHistory runs hook before its first Range.
type racingHistory struct {
	*chstore.Store
	hook func()
}

func (h *racingHistory) Range(ctx context.Context, conv string, epoch, from, to uint64) ([]*schemas.Sequenced, error) {
	if h.hook != nil {
		h.hook()
		h.hook = nil
	}
	return h.Store.Range(ctx, conv, epoch, from, to)
}

// A forced rebuild that its conversation's writers race records an epoch
// it never commits. The next run must still read the store's own epoch,
// which the writers went on with, not that newer, frozen one.
func TestARebuildRacedByWritersLeavesNoEpochThatHidesTheirMessages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := newEpochRig(t)
	recs := r.send(ctx, t, 10, "old")
	if err := r.ch.InsertBatch(ctx, recs[:8]); err != nil { // the sink is 2 behind
		t.Fatal(err)
	}
	var late []*schemas.Sequenced
	src := &racingHistory{Store: r.ch, hook: func() { late = r.send(ctx, t, 1, "meanwhile") }}
	_, err := rebuild.New(r.rs).Rebuild(ctx, src, "g", rebuild.Options{Now: r.now, Force: true})
	if !errors.Is(err, rebuild.ErrRaced) {
		t.Fatalf("raced rebuild: %v, want ErrRaced", err)
	}
	if lin, err := r.ch.Lineage(ctx, "g"); err != nil || len(lin) != 1 {
		t.Fatalf("lineage after the raced run %v, %v; want the one epoch it recorded", lin, err)
	}
	// The sink catches up with everything the live epoch holds.
	if err := r.ch.InsertBatch(ctx, append(recs[8:], late...)); err != nil {
		t.Fatal(err)
	}
	before := readConv(t, r.rs, "g")
	res, err := rebuild.New(r.rs).Rebuild(ctx, r.ch, "g", rebuild.Options{Now: r.now})
	if err != nil || res.NewEpoch || res.Seq != 11 || fmt.Sprint(res.Epoch) != before.epoch {
		t.Fatalf("rebuild after the race %+v, %v; want the live epoch %s kept at 11", res, err, before.epoch)
	}
	if after := readConv(t, r.rs, "g"); !slices.Equal(after.timeline, before.timeline) {
		t.Fatalf("timeline after the rebuild has %d entries, want the live %d", len(after.timeline), len(before.timeline))
	}
}

func TestRebuildAfterARedisLossRestoresTheConversationTag(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := newEpochRig(t)
	join := &schemas.Message{ClientMsgId: "j", ConvId: "g", ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: "bob",
		Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"bob", "alice"}, Tag: "finance"}
	res, err := r.rs.Sequence(ctx, "g", []*schemas.Message{join}, nil, r.now.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	recs := append([]*schemas.Sequenced{res.Items[0].Sequenced}, r.send(ctx, t, 2, "new")...)
	if err := r.ch.InsertBatch(ctx, recs); err != nil {
		t.Fatal(err)
	}
	r.lose(ctx, t)
	if _, err := rebuild.New(r.rs).Rebuild(ctx, r.ch, "g", rebuild.Options{Now: r.now}); err != nil {
		t.Fatal(err)
	}
	info, ok, err := r.rs.ConvRetentionInfo(ctx, "g")
	if err != nil || !ok || info.Tag != "finance" {
		t.Fatalf("after the rebuild: %+v ok %v err %v; want tag finance", info, ok, err)
	}
}
