package push

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

type fixture struct {
	t     *testing.T
	store *redisstore.Store
	p     *Pusher
	reg   *prometheus.Registry
	sub   *live.Subscription
}

func newFixture(t *testing.T) *fixture {
	rdb, prefix := testenv.Redis(t)
	cfg := redisstore.Config{Prefix: prefix, LargeGroupThreshold: 3}
	st, err := redisstore.New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	p, err := New(Config{Store: cfg, Metrics: reg}, rdb)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, store: st, p: p, reg: reg}
	bus := live.NewBus(rdb, time.Second)
	f.sub = bus.Subscribe(context.Background(), 64)
	t.Cleanup(f.sub.Close)
	k := st.Keys()
	if err := f.sub.Add(context.Background(), k.NodeChannel("a"), k.NodeChannel("b"), k.ConvChannel("big")); err != nil {
		t.Fatal(err)
	}
	return f
}

// sequence stores a record through the real sequencing step and returns
// its sequenced form as a record of im.sequenced.
func (f *fixture) sequence(m *schemas.Message) *kgo.Record {
	f.t.Helper()
	ctx := context.Background()
	now := time.Now().UnixMilli()
	res, err := f.store.Sequence(ctx, m.GetConvId(), []*schemas.Message{m}, nil, now)
	if err != nil || len(res.Items) != 1 || res.Items[0].Status != redisstore.SeqNew {
		f.t.Fatalf("sequence %s: %+v %v", m.GetClientMsgId(), res, err)
	}
	sq := &schemas.Sequenced{Message: m, Seq: res.Items[0].Seq, Epoch: res.Epoch, WriteTimeMs: now}
	v, err := proto.Marshal(sq)
	if err != nil {
		f.t.Fatal(err)
	}
	return &kgo.Record{Topic: schemas.TopicSequenced, Value: v}
}

func (f *fixture) online(user, device, node string) {
	f.t.Helper()
	_, _, err := f.store.SetPresence(context.Background(), user, device,
		redisstore.PresenceLease{Node: node, Conn: user + "-" + device, TTL: time.Minute, Keep: time.Minute}, time.Now())
	if err != nil {
		f.t.Fatal(err)
	}
}

// published reads what arrived on the channels within wait.
func (f *fixture) published(wait time.Duration) []live.Envelope {
	var out []live.Envelope
	deadline := time.After(wait)
	for {
		select {
		case data := <-f.sub.Messages():
			b, err := live.Decode(data)
			if err != nil {
				f.t.Fatal(err)
			}
			out = append(out, b.Envelopes...)
		case <-deadline:
			return out
		}
	}
}

func group(conv, sender string, kind schemas.Kind, recipients ...string) *schemas.Message {
	return &schemas.Message{ClientMsgId: conv + "-" + sender + "-" + kind.String(), ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: sender, Kind: kind, Recipients: recipients, Body: []byte("hi")}
}

func TestSmallGroupMessageGoesOncePerNodeToTheOnlineDevicesOnly(t *testing.T) {
	f := newFixture(t)
	f.sequence(group("team", "alice", schemas.Kind_KIND_MEMBER_JOIN, "alice", "bob", "carol"))
	msg := f.sequence(group("team", "alice", schemas.Kind_KIND_MESSAGE))
	f.online("bob", "phone", "a")
	f.online("bob", "laptop", "b")
	f.online("alice", "phone", "a")
	// carol is offline: nothing goes to her.
	if _, err := f.p.Handle(context.Background(), []*kgo.Record{msg}); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, e := range f.published(300 * time.Millisecond) {
		for _, tg := range e.Targets {
			got[e.Conv] = append(got[e.Conv], tg.User+"/"+tg.Device)
		}
		if e.Kind != live.KindPush || e.Large {
			t.Errorf("envelope %+v, want a push of a small group", e)
		}
	}
	sort.Strings(got["team"])
	if want := []string{"alice/phone", "bob/laptop", "bob/phone"}; len(got["team"]) != 3 || got["team"][0] != want[0] || got["team"][2] != want[2] {
		t.Fatalf("targets %v, want %v", got["team"], want)
	}
	if n := testutil.ToFloat64(f.p.metrics.publishes.WithLabelValues("node")); n != 2 {
		t.Errorf("%v node publishes, want one per node (2)", n)
	}
}

func TestLargeGroupMessageIsOnePublishWithoutPerMemberLookups(t *testing.T) {
	f := newFixture(t)
	f.sequence(group("big", "m1", schemas.Kind_KIND_MEMBER_JOIN, "m1", "m2", "m3", "m4", "m5"))
	var recs []*kgo.Record
	for i := 0; i < 3; i++ {
		m := group("big", "m1", schemas.Kind_KIND_MESSAGE)
		m.ClientMsgId += string(rune('a' + i))
		recs = append(recs, f.sequence(m))
	}
	for _, u := range []string{"m1", "m2", "m3", "m4", "m5"} {
		f.online(u, "phone", "a")
	}
	before := testutil.ToFloat64(f.p.metrics.lookups)
	if _, err := f.p.Handle(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	envs := f.published(300 * time.Millisecond)
	if len(envs) != 3 {
		t.Fatalf("%d envelopes, want the 3 messages", len(envs))
	}
	for _, e := range envs {
		if !e.Large || len(e.Targets) != 0 || e.Conv != "big" {
			t.Errorf("envelope %+v, want a targetless push on the group's channel", e)
		}
	}
	if n := testutil.ToFloat64(f.p.metrics.lookups) - before; n != 0 {
		t.Errorf("%v presence lookups for a large group's messages, want 0", n)
	}
	if n := testutil.ToFloat64(f.p.metrics.publishes.WithLabelValues("group")); n != 1 {
		t.Errorf("%v group publishes for one batch, want 1", n)
	}
}

func TestExpiredAndClosedPresenceIsNotPushedTo(t *testing.T) {
	f := newFixture(t)
	msg := f.sequence(&schemas.Message{ClientMsgId: "d1", ConvId: "dm", ConvType: schemas.ConvType_CONV_TYPE_DIRECT,
		Sender: "alice", Recipients: []string{"bob"}, Kind: schemas.Kind_KIND_MESSAGE, Body: []byte("x")})
	ctx := context.Background()
	// bob's phone's lease ran out (its node died); his laptop closed.
	if _, _, err := f.store.SetPresence(ctx, "bob", "phone", redisstore.PresenceLease{Node: "a", Conn: "c1", TTL: time.Millisecond,
		Keep: time.Minute}, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	f.online("bob", "laptop", "b")
	if err := f.store.ClearPresence(ctx, "bob", "laptop", "bob-laptop", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.p.Handle(ctx, []*kgo.Record{msg}); err != nil {
		t.Fatal(err)
	}
	if envs := f.published(300 * time.Millisecond); len(envs) != 0 {
		t.Fatalf("pushed %+v to devices that are not online", envs)
	}
}

func TestSmallConversationWithTheSameMembersIsOnePublishOnItsChannel(t *testing.T) {
	f := newFixture(t)
	if err := f.sub.Add(context.Background(), f.store.Keys().ConvChannel("team")); err != nil {
		t.Fatal(err)
	}
	f.sequence(group("team", "alice", schemas.Kind_KIND_MEMBER_JOIN, "alice", "bob"))
	first := f.sequence(group("team", "alice", schemas.Kind_KIND_MESSAGE))
	f.online("bob", "phone", "a")
	ctx := context.Background()
	// The first record of a membership the stage has not seen goes to
	// the members' nodes, which start listening to the channel.
	if _, err := f.p.Handle(ctx, []*kgo.Record{first}); err != nil {
		t.Fatal(err)
	}
	if envs := f.published(300 * time.Millisecond); len(envs) != 1 || len(envs[0].Targets) != 1 {
		t.Fatalf("first push %+v, want one envelope naming bob's phone", envs)
	}
	var recs []*kgo.Record
	for i := 0; i < 3; i++ {
		m := group("team", "bob", schemas.Kind_KIND_MESSAGE)
		m.ClientMsgId += string(rune('a' + i))
		recs = append(recs, f.sequence(m))
	}
	lookups := testutil.ToFloat64(f.p.metrics.lookups)
	if _, err := f.p.Handle(ctx, recs); err != nil {
		t.Fatal(err)
	}
	envs := f.published(300 * time.Millisecond)
	if len(envs) != 3 {
		t.Fatalf("%d envelopes, want the 3 messages", len(envs))
	}
	for _, e := range envs {
		if len(e.Targets) != 0 || e.Conv != "team" || e.Large {
			t.Errorf("envelope %+v, want a targetless push on the conversation's channel", e)
		}
	}
	if n := testutil.ToFloat64(f.p.metrics.lookups) - lookups; n != 0 {
		t.Errorf("%v presence lookups with the membership unchanged, want 0", n)
	}
	if n := testutil.ToFloat64(f.p.metrics.publishes.WithLabelValues("conv")); n != 1 {
		t.Errorf("%v conversation publishes for one batch, want 1", n)
	}
}

// TestAJoinerOfASmallGroupIsToldToListenAndTheJoinGoesOnTheChannel: the
// members told already listen to the channel; only the joiner's node is
// named, to listen (the join is not the joiner's to read).
func TestAJoinerOfASmallGroupIsToldToListenAndTheJoinGoesOnTheChannel(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.sub.Add(ctx, f.store.Keys().ConvChannel("team")); err != nil {
		t.Fatal(err)
	}
	f.sequence(group("team", "alice", schemas.Kind_KIND_MEMBER_JOIN, "alice", "bob"))
	hello := f.sequence(group("team", "alice", schemas.Kind_KIND_MESSAGE))
	f.online("bob", "phone", "b")
	if _, err := f.p.Handle(ctx, []*kgo.Record{hello}); err != nil {
		t.Fatal(err)
	}
	f.published(200 * time.Millisecond)
	join := group("team", "alice", schemas.Kind_KIND_MEMBER_JOIN, "carol")
	join.ClientMsgId += "-carol"
	rec := f.sequence(join)
	f.online("carol", "phone", "a")
	if _, err := f.p.Handle(ctx, []*kgo.Record{rec}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	channel := 0
	for _, e := range f.published(300 * time.Millisecond) {
		if len(e.Targets) == 0 && e.Kind == live.KindPush {
			channel++
		}
		for _, tg := range e.Targets {
			got[tg.User] = e.Kind
		}
	}
	if got["carol"] != live.KindListen || len(got) != 1 || channel != 1 {
		t.Fatalf("envelopes by user %v and %d on the channel, want carol told to listen and the join on the channel", got, channel)
	}
}

// TestOnlyTheRecordCarryingAMembershipChangeGoesByName: once the members'
// nodes were sent a record by name, they listen and catch up from the
// store themselves; the records after it, in the same batch or the next,
// go on the channel alone, with no presence lookup.
func TestOnlyTheRecordCarryingAMembershipChangeGoesByName(t *testing.T) {
	for _, split := range []bool{false, true} {
		t.Run(map[bool]string{false: "same batch", true: "next batch"}[split], func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			if err := f.sub.Add(ctx, f.store.Keys().ConvChannel("team")); err != nil {
				t.Fatal(err)
			}
			f.sequence(group("team", "alice", schemas.Kind_KIND_MEMBER_JOIN, "alice", "bob"))
			f.online("bob", "phone", "a")
			var recs []*kgo.Record
			for i := 0; i < 3; i++ {
				m := group("team", "alice", schemas.Kind_KIND_MESSAGE)
				m.ClientMsgId += string(rune('a' + i))
				recs = append(recs, f.sequence(m))
			}
			batches := [][]*kgo.Record{recs}
			if split {
				batches = [][]*kgo.Record{recs[:1], recs[1:]}
			}
			var envs []live.Envelope
			for _, b := range batches {
				if _, err := f.p.Handle(ctx, b); err != nil {
					t.Fatal(err)
				}
				envs = append(envs, f.published(300*time.Millisecond)...)
			}
			var named, channel []uint64
			for _, e := range envs {
				var sq schemas.Sequenced
				if err := proto.Unmarshal(e.Record, &sq); err != nil {
					t.Fatal(err)
				}
				if len(e.Targets) > 0 {
					named = append(named, sq.GetSeq())
				} else {
					channel = append(channel, sq.GetSeq())
				}
			}
			sort.Slice(channel, func(i, j int) bool { return channel[i] < channel[j] })
			if len(named) != 1 || named[0] != 2 || len(channel) != 2 || channel[0] != 3 || channel[1] != 4 {
				t.Fatalf("by name %v, on the channel %v; want seq 2 by name, 3 and 4 on the channel", named, channel)
			}
			if n := testutil.ToFloat64(f.p.metrics.lookups); n != 2 {
				t.Errorf("%v presence lookups, want 2 (alice and bob, once)", n)
			}
		})
	}
}

// roundTrips counts what a client sends: each pipeline or lone command is
// one round trip.
type roundTrips struct {
	mu    sync.Mutex
	trips [][]string
}

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.add([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.add(cmds)
		return next(ctx, cmds)
	}
}
func (r *roundTrips) add(cmds []redis.Cmder) {
	var names []string
	for _, c := range cmds {
		names = append(names, c.Name())
	}
	r.mu.Lock()
	r.trips = append(r.trips, names)
	r.mu.Unlock()
}
func (r *roundTrips) take() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.trips
	r.trips = nil
	return out
}

// TestAConversationResolvedBeforeIsPublishedInOneRoundTripUntilItChanges:
// once the stage resolved a conversation, its records cost one round trip
// (the check that it is unchanged and the publish are one step); a
// membership that changed behind the stage's back publishes nothing
// there, and the records are resolved again and reach the new member.
func TestAConversationResolvedBeforeIsPublishedInOneRoundTripUntilItChanges(t *testing.T) {
	for _, large := range []bool{false, true} {
		t.Run(map[bool]string{false: "small group", true: "large group"}[large], func(t *testing.T) {
			rdb, prefix := testenv.Redis(t)
			trips := &roundTrips{}
			rdb.AddHook(trips)
			cfg := redisstore.Config{Prefix: prefix, LargeGroupThreshold: 3}
			st, err := redisstore.New(rdb, cfg)
			if err != nil {
				t.Fatal(err)
			}
			p, err := New(Config{Store: cfg, Metrics: prometheus.NewRegistry()}, rdb)
			if err != nil {
				t.Fatal(err)
			}
			f := &fixture{t: t, store: st, p: p}
			ctx := context.Background()
			f.sub = live.NewBus(rdb, time.Second).Subscribe(ctx, 64)
			t.Cleanup(f.sub.Close)
			k := st.Keys()
			if err := f.sub.Add(ctx, k.NodeChannel("a"), k.ConvChannel("team")); err != nil {
				t.Fatal(err)
			}
			members := []string{"alice", "bob"}
			if large {
				members = append(members, "carol", "dan")
			}
			f.sequence(group("team", "alice", schemas.Kind_KIND_MEMBER_JOIN, members...))
			f.online("bob", "phone", "a")
			msg := func(id string) *kgo.Record {
				m := group("team", "alice", schemas.Kind_KIND_MESSAGE)
				m.ClientMsgId += id
				return f.sequence(m)
			}
			first := msg("1")
			if _, err := p.Handle(ctx, []*kgo.Record{first}); err != nil {
				t.Fatal(err)
			}
			f.published(200 * time.Millisecond)
			recs := []*kgo.Record{msg("2"), msg("3")}
			trips.take()
			if _, err := p.Handle(ctx, recs); err != nil {
				t.Fatal(err)
			}
			if got := trips.take(); len(got) != 1 || len(got[0]) != 1 || got[0][0] != "evalsha" {
				t.Fatalf("round trips %v, want one: the checked publish", got)
			}
			envs := f.published(300 * time.Millisecond)
			if len(envs) != 2 || len(envs[0].Targets) != 0 || envs[0].Large != large {
				t.Fatalf("envelopes %+v, want the 2 records on the channel, large %v", envs, large)
			}

			// erin joins; the stage is not handed the join (as after a
			// rebuild, or a record it has not reached yet and that its
			// read of the store is ahead of).
			join := group("team", "alice", schemas.Kind_KIND_MEMBER_JOIN, "erin")
			join.ClientMsgId += "-erin"
			f.sequence(join)
			f.online("erin", "laptop", "a")
			after := msg("4")
			if _, err := p.Handle(ctx, []*kgo.Record{after}); err != nil {
				t.Fatal(err)
			}
			if n := testutil.ToFloat64(p.metrics.changed); n != 1 {
				t.Errorf("%v batches refused as changed, want 1", n)
			}
			var toErin, onChannel int
			for _, e := range f.published(300 * time.Millisecond) {
				if len(e.Targets) == 0 {
					onChannel++
				}
				for _, tg := range e.Targets {
					if tg.User == "erin" && e.Kind == live.KindPush {
						toErin++
					}
				}
			}
			if large {
				// a large group's joiners are named by their join only
				if onChannel != 1 {
					t.Fatalf("%d envelopes on the channel, want the record once", onChannel)
				}
				return
			}
			if toErin != 1 || onChannel != 1 {
				t.Fatalf("%d envelopes to erin and %d on the channel, want the record by name to erin's node and once on the channel", toErin, onChannel)
			}
		})
	}
}

// TestTypingOfAJoinerTheStageHasNotSeenIsPushed: a QoS 0 record of a
// sender the stage's cache does not know as a member is not skipped on
// the cache's word: the membership is read, and a sender who joined
// meanwhile is a member.
func TestTypingOfAJoinerTheStageHasNotSeenIsPushed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.sub.Add(ctx, f.store.Keys().ConvChannel("team")); err != nil {
		t.Fatal(err)
	}
	f.sequence(group("team", "alice", schemas.Kind_KIND_MEMBER_JOIN, "alice", "bob"))
	if _, err := f.p.Handle(ctx, []*kgo.Record{f.sequence(group("team", "alice", schemas.Kind_KIND_MESSAGE))}); err != nil {
		t.Fatal(err)
	}
	f.published(200 * time.Millisecond)
	join := group("team", "alice", schemas.Kind_KIND_MEMBER_JOIN, "erin")
	join.ClientMsgId += "-erin"
	f.sequence(join) // not handed to the stage
	typing := func(sender string) *kgo.Record {
		v, err := proto.Marshal(&schemas.Message{ClientMsgId: "t-" + sender, ConvId: "team", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
			Sender: sender, Kind: schemas.Kind_KIND_MESSAGE, Qos: schemas.QoS_QOS_AT_MOST_ONCE, ContentType: "application/x-typing"})
		if err != nil {
			t.Fatal(err)
		}
		return &kgo.Record{Topic: schemas.TopicMessages, Value: v}
	}
	for _, tc := range []struct {
		sender string
		pushed bool
	}{{"erin", true}, {"mallory", false}} {
		if _, err := f.p.Handle(ctx, []*kgo.Record{typing(tc.sender)}); err != nil {
			t.Fatal(err)
		}
		var got int
		for _, e := range f.published(300 * time.Millisecond) {
			if e.Kind == live.KindEphemeral {
				got++
			}
		}
		if (got > 0) != tc.pushed {
			t.Errorf("typing of %s: %d ephemeral envelopes, want pushed %v", tc.sender, got, tc.pushed)
		}
	}
}

func TestARefusalIsKeptForItsSenderEvenWhenNoDeviceIsOnline(t *testing.T) {
	f := newFixture(t)
	m := group("team", "alice", schemas.Kind_KIND_MESSAGE)
	v, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Second).Truncate(time.Millisecond)
	dead := &kgo.Record{Topic: schemas.TopicDeadLetter, Value: v, Timestamp: at, Headers: []kgo.RecordHeader{
		{Key: schemas.HeaderDeadTopic, Value: []byte(schemas.TopicMessages)},
		{Key: schemas.HeaderDeadReason, Value: []byte("sender: alice is not a member of team")},
		{Key: schemas.HeaderDeadSeq, Value: []byte("0")},
		{Key: schemas.HeaderDeadCode, Value: []byte(schemas.RefusalNotAMember)}}}
	// Handled twice, as after a retried round: kept once.
	for range 2 {
		if _, err := f.p.Handle(context.Background(), []*kgo.Record{dead}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := f.store.Rejections(context.Background(), "alice", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ClientMsgID != m.GetClientMsgId() || got[0].Conv != "team" ||
		got[0].AtMS != at.UnixMilli() || got[0].Code != schemas.RefusalNotAMember ||
		got[0].Reason != schemas.RefusalSentence(schemas.RefusalNotAMember) {
		t.Fatalf("alice's rejections are %+v, want her refused record once, at the dead letter's time, by its code", got)
	}
	if envs := f.published(100 * time.Millisecond); len(envs) != 0 {
		t.Errorf("%d envelopes published with alice offline, want none", len(envs))
	}
}

func TestAConversationWhoseKeysCanNeverBeReadCostsOnlyItsOwnPushes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.sequence(group("team", "alice", schemas.Kind_KIND_MEMBER_JOIN, "alice", "bob"))
	f.sequence(group("bad", "alice", schemas.Kind_KIND_MEMBER_JOIN, "alice", "bob"))
	good := f.sequence(group("team", "alice", schemas.Kind_KIND_MESSAGE))
	broken := f.sequence(group("bad", "alice", schemas.Kind_KIND_MESSAGE))
	f.online("bob", "phone", "a")
	f.online("carol", "phone", "b")
	rdb := f.store.Client()
	k := f.store.Keys()
	if err := rdb.Set(ctx, k.ConvMeta("bad"), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, k.Rejections("carol"), "not a zset", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// alice's presence cannot be read either: she counts as offline, and
	// bob is still sent team's message, once.
	if err := rdb.Set(ctx, k.Presence("alice"), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	m := group("team", "carol", schemas.Kind_KIND_MESSAGE)
	v, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	refused := &kgo.Record{Topic: schemas.TopicDeadLetter, Value: v, Timestamp: time.Now(), Headers: []kgo.RecordHeader{
		{Key: schemas.HeaderDeadTopic, Value: []byte(schemas.TopicMessages)},
		{Key: schemas.HeaderDeadReason, Value: []byte("sender: carol is not a member of team")}}}

	done := make(chan error, 1)
	go func() {
		_, err := f.p.Handle(ctx, []*kgo.Record{broken, good, refused})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the round failed (%v), so it would be retried for ever", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the round did not end")
	}
	got := map[string]int{}
	var teamTargets []string
	for _, e := range f.published(300 * time.Millisecond) {
		got[e.Kind+" "+e.Conv]++
		if e.Kind == live.KindPush && e.Conv == "team" {
			for _, tg := range e.Targets {
				teamTargets = append(teamTargets, tg.User+"/"+tg.Device)
			}
		}
	}
	if got[live.KindPush+" team"] == 0 || got[live.KindRejected+" team"] == 0 || got[live.KindPush+" bad"] != 0 {
		t.Fatalf("published %v, want team's message and carol's refusal, nothing of bad", got)
	}
	if fmt.Sprint(teamTargets) != "[bob/phone]" {
		t.Errorf("team's message went to %v, want bob's phone once", teamTargets)
	}
	if n := testutil.ToFloat64(f.p.metrics.skipped.WithLabelValues("store_refused")); n != 1 {
		t.Errorf("%v records counted as refused by the store, want bad's one", n)
	}
	if n := testutil.ToFloat64(f.p.metrics.rejectionsNotKept); n != 1 {
		t.Errorf("%v refusals counted as not kept, want carol's one", n)
	}
}
