package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/luacheck"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
)

// newKeysGuard runs every script of this package behind the keys guard
// (internal/luacheck, testdata/keys_guard.lua): a script then fails as
// soon as it touches a key that is not one of its KEYS. Scripts that
// prepend a *_lib.lua are known by the file that follows it. The scripts
// of live/lua and redisstore/rebuild/lua run behind the same guard in
// their packages' tests.
func newKeysGuard(t *testing.T) *luacheck.Guard {
	t.Helper()
	g := luacheck.NewGuard(t)
	g.AddScripts(t, "lua/*.lua", dedupeLibLua, receiptsLibLua, fenceLibLua, fenceLibLua+dedupeLibLua, ackCursorLibLua)
	return g
}

// commandHook is a go-redis hook that shows fn every command a client
// sends, alone or in a pipeline, before it goes.
type commandHook = luacheck.CommandHook

func TestTheKeysGuardCatchesAScriptThatBuildsAKey(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	g := newKeysGuard(t)
	rdb.AddHook(g)
	ctx := context.Background()
	builds := redis.NewScript(`return redis.call('GET', KEYS[1] .. ':other')`)
	g.Add("inline", `return redis.call('GET', KEYS[1] .. ':other')`)
	err := builds.Run(ctx, rdb, []string{prefix + "{u:x}:k"}).Err()
	if err == nil || !strings.Contains(err.Error(), "not in KEYS") {
		t.Fatalf("a script reading a key it built answered %v, want the guard's error", err)
	}
	declares := redis.NewScript(`return redis.call('GET', KEYS[1])`)
	g.Add("inline2", `return redis.call('GET', KEYS[1])`)
	if err := declares.Run(ctx, rdb, []string{prefix + "{u:x}:k"}).Err(); err != nil && err != redis.Nil {
		t.Fatalf("a script reading its KEYS failed: %v", err)
	}
}

func TestEveryScriptTouchesOnlyTheKeysItIsGiven(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	g := newKeysGuard(t)
	rdb.AddHook(g)
	s, err := New(rdb, Config{Prefix: prefix, LargeGroupThreshold: 3, MaxDevices: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := expNow
	ms := now.Add(-40 * expDay).UnixMilli()
	// Every step runs whatever failed before it, so that each script that
	// touches a key it was not given is reported.
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	grp, dm := schemas.ConvType_CONV_TYPE_GROUP, schemas.ConvType_CONV_TYPE_DIRECT
	seq := func(conv string, msgs ...*schemas.Message) *SequenceResult {
		t.Helper()
		res, err := s.Sequence(ctx, conv, msgs, nil, ms)
		must("sequence "+conv, err)
		return res
	}
	text := func(conv string, ct schemas.ConvType, id, sender string, mentions ...string) *schemas.Message {
		m := &schemas.Message{ConvId: conv, ConvType: ct, Kind: schemas.Kind_KIND_MESSAGE, ClientMsgId: id, Sender: sender,
			ContentType: "text/plain", Body: []byte("hi " + id), Mentions: mentions}
		if ct == dm {
			m.Recipients = []string{"bob"}
		}
		return m
	}

	// Sequencing: 160 ids in one day split the day's dedupe buckets four
	// times; a resend
	// is looked up in them; ids sharing a digest go to the exact map.
	seq("g", &schemas.Message{ConvId: "g", ConvType: grp, Kind: schemas.Kind_KIND_MEMBER_JOIN, ClientMsgId: "j",
		Sender: "ann", Recipients: []string{"ann", "bob"}})
	var latest []*schemas.Sequenced
	for b := range 8 {
		var batch []*schemas.Message
		for i := range 20 {
			batch = append(batch, text("g", grp, fmt.Sprint("g-", b, "-", i), "bob", "ann"))
		}
		if res := seq("g", batch...); res != nil {
			latest = []*schemas.Sequenced{res.Items[19].Sequenced}
		}
	}
	if dup := seq("g", text("g", grp, "g-0-3", "bob")); dup != nil && dup.Items[0].Status != SeqDuplicate {
		t.Fatalf("a resend was sequenced again: %+v", dup.Items[0])
	}
	seq("d", text("d", dm, "d-1", "ann"))
	s.digest = func(string) string { return "\x00\x00\x00\x00\x00\x00\x00\x01" }
	seq("x", text("x", dm, "x-1", "ann"), text("x", dm, "x-2", "ann"))
	seq("x", text("x", dm, "x-2", "ann"))
	s.digest = dedupeDigest
	_, err = s.RestoreDedupe(ctx, "g", []DedupeRestore{{Day: DayOf(ms), Cmid: "g-0-1", Seq: 3}, {Day: DayOf(ms) - 1, Cmid: "old", Seq: 1}})
	must("restore dedupe", err)

	// A large group with @all references.
	seq("big", &schemas.Message{ConvId: "big", ConvType: grp, Kind: schemas.Kind_KIND_MEMBER_JOIN, ClientMsgId: "bj",
		Sender: "ann", Recipients: []string{"ann", "bob", "cid", "dan"}})
	all := text("big", grp, "b-all", "bob")
	all.MentionAll = true
	seq("big", all)

	// The inbox, reads, previews, the list and sync.
	ev := func(k InboxEventKind, s uint64) InboxEvent { return InboxEvent{Kind: k, Seq: s, WriteMS: ms} }
	_, errs := s.ApplyInboxes(ctx, []InboxUpdate{
		{User: "ann", Conv: "g", Form: InboxGroup, Events: []InboxEvent{ev(InboxJoined, 1), ev(InboxMentioned, 2), ev(InboxMentioned, 3), ev(InboxDelivered, 4)}},
		{User: "ann", Conv: "d", Form: InboxDirect, Events: []InboxEvent{ev(InboxOwn, 1)}},
		{User: "ann", Conv: "big", Form: InboxLarge, Events: []InboxEvent{ev(InboxJoined, 1), ev(InboxConvertLarge, 1)}},
		// more users in the same script call: each update's keys are its own
		{User: "bob", Conv: "g", Form: InboxGroup, Events: []InboxEvent{ev(InboxOwn, 2), ev(InboxMentioned, 3)}},
		{User: "cid", Conv: "big", Form: InboxLarge, Events: []InboxEvent{ev(InboxConvertLarge, 0), ev(InboxMentioned, 2)}},
	})
	for _, err := range errs {
		must("apply inbox", err)
	}
	_, err = s.ApplyReads(ctx, []ReadMark{{User: "ann", Conv: "g", Seq: 2}})
	must("read receipt", err)
	must("previews", s.ApplyPreviews(ctx, latest))
	// The list and sync run behind the guard in redisstore/readpath's
	// tests; the list indexes they build on are built here.
	forgetListIndexes(t, s, "ann")
	must("list index", s.BuildListIndex(ctx, "ann"))

	// Acks from more devices than allowed evict the least recently used.
	for i, dev := range []string{"phone", "tablet", "laptop", "watch"} {
		_, err := s.AckDevice(ctx, "ann", dev, []AckItem{{Conv: "g", Seq: 3, Epoch: 0}}, ms+int64(i))
		must("ack "+dev, err)
	}
	// A registered device's cursor raised alone, and one evicted since
	// taking the full step.
	_, ackErrs := s.AckRegisteredDevices(ctx, []DeviceAck{
		{User: "ann", Device: "watch", Items: []AckItem{{Conv: "g", Seq: 4}}, NowMS: ms + 5, Registered: true},
		{User: "ann", Device: "phone", Items: []AckItem{{Conv: "g", Seq: 4}}, NowMS: ms + 6, Registered: true}})
	must("ack registered devices", errors.Join(ackErrs...))
	_, err = s.EvictDevices(ctx, "ann", now, 10)
	must("evict devices", err)

	// Expiry, the sweep lease, the checker's reads, the census.
	for _, c := range []string{"g", "big", "d"} {
		_, err := s.ExpireConversation(ctx, c, now, Retention{}, 100)
		must("expire "+c, err)
	}
	_, err = s.ExpireMentions(ctx, "ann", now, Retention{}, 10)
	must("expire mentions", err)
	st, err := s.AcquireSweep(ctx, "job", "tok", time.Minute, time.Hour, now)
	must("acquire sweep", err)
	_, err = s.AdvanceSweep(ctx, "job", "tok", st.Cursor, 0, now)
	must("advance sweep", err)
	_, err = s.CheckTimeline(ctx, "g", 1, 10)
	must("check timeline", err)
	_, _, err = s.TimelineEntries(ctx, "g", 1, 3)
	must("timeline entries", err)
	nodes, err := s.ScanNodes(ctx)
	if err != nil || len(nodes) == 0 {
		t.Fatalf("scan nodes: %v %v", nodes, err)
	}
	for cur, first := uint64(0), true; first || cur != 0; first = false {
		if _, cur, err = s.CensusStep(ctx, nodes[0], cur, 10_000, now, 10); err != nil {
			must("census", err)
			break
		}
	}

	// The restore's steps: the changelog fence, a head seeded, a large
	// group's conversion noted.
	must("raise the changelog fence", s.RaiseFence(ctx, map[int32]int64{0: 7, 3: 2}))
	_, err = s.SeedHead(ctx, "seeded", 11, 5, schemas.ConvType_CONV_TYPE_GROUP)
	must("seed a head", err)
	must("mark large", s.MarkLargeConverted(ctx, "g"))

	// A data key rewrapped (keys rekey).
	_, err = s.PutDataKey(ctx, "g", "m1:old")
	must("put data key", err)
	_, err = s.SwapDataKey(ctx, "g", "m1:old", "m2:new")
	must("swap data key", err)

	// The live channel: presence leases and receipt cursors.
	lease := PresenceLease{Node: "a", Conn: "c1", TTL: time.Minute, Keep: time.Minute}
	_, _, err = s.SetPresence(ctx, "ann", "phone", lease, now)
	must("set presence", err)
	_, err = s.RefreshPresence(ctx, "a", []LeaseRef{{User: "ann", Device: "phone", Conn: "c1"}}, time.Minute, now)
	must("refresh presence", err)
	must("clear presence", s.ClearPresence(ctx, "ann", "phone", "c1", now))
	_, err = s.AddRejections(ctx, []Rejection{{Sender: "ann", Conv: "g", ClientMsgID: "m1", Reason: "no", AtMS: ms}}, now)
	must("keep a rejection", err)
	must("revoke a device", s.Revoke(ctx, "ann", "phone", now, time.Hour))
	gEpoch, err := rdb.HGet(ctx, s.keys.ConvMeta("g"), "epoch").Uint64()
	must("epoch of g", err)
	_, err = s.RaiseReceipts(ctx, ReceiptRead, []ReceiptMark{{Conv: "g", Epoch: gEpoch, Member: "bob", Seq: 3}})
	must("raise receipts", err)
	_, _, err = s.AckAndRaise(ctx, "ann", "phone", []AckItem{{Conv: "g", Seq: 3, Epoch: gEpoch}}, ms+10,
		[]ReceiptMark{{Conv: "g", Epoch: gEpoch, Member: "ann", Seq: 3}})
	must("ack and raise", err)
	_, _, _, err = s.RaiseAckedReceipts(ctx, "ann", []AckItem{{Conv: "g", Seq: 4}})
	must("raise acked receipts", err)
	_, err = s.CountReceipts(ctx, "g", 3, "bob")
	must("count receipts", err)

	if t.Failed() {
		return
	}
	if unknown := g.Unknown(); len(unknown) > 0 {
		t.Fatalf("scripts the guard does not know ran: %v", unknown)
	}
	if left := g.NotRun(); len(left) > 0 {
		t.Fatalf("the test never ran %v: extend it", left)
	}
}

// onFirstScript is a go-redis hook that runs once, before the first script
// call whose keys include key, and then steps aside.
type onFirstScript struct {
	key  string
	do   func()
	done bool
}

func (h *onFirstScript) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *onFirstScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *onFirstScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		name := strings.ToLower(fmt.Sprint(cmd.Args()[0]))
		if !h.done && (name == "evalsha" || name == "eval") && slices.Contains(cmd.Args(), any(h.key)) {
			h.done = true
			h.do()
		}
		return next(ctx, cmd)
	}
}

func TestScriptsGivenKeysFromAStaleReadRefuseAndAreRunAgain(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// key the first script call names; stale changes the data between
		// the caller's read and that call
		key   func(s *Store) string
		stale func(s *Store, rdb *redis.Client)
		run   func(s *Store) error
		check func(s *Store, rdb *redis.Client) error
	}{
		{"an ack evicting a device registered after the read",
			func(s *Store) string { return s.keys.Devices("ann") },
			func(s *Store, rdb *redis.Client) {
				rdb.ZAdd(ctx, s.keys.Devices("ann"), redis.Z{Member: "old", Score: 1})
				rdb.HSet(ctx, s.keys.Cursor("ann", "old"), "g", 1)
			},
			func(s *Store) error {
				_, err := s.AckDevice(ctx, "ann", "new", []AckItem{{Conv: "g", Seq: 2}}, 1000)
				return err
			},
			func(s *Store, rdb *redis.Client) error {
				if n := rdb.Exists(ctx, s.keys.Cursor("ann", "old")).Val(); n != 0 || !rdb.SIsMember(ctx, s.keys.Evicted("ann"), "old").Val() {
					return fmt.Errorf("the late device was not evicted with its cursor")
				}
				return nil
			}},
		{"sequencing into a day split after the read",
			func(s *Store) string { return s.keys.Dedupe("g", DayOf(5000)) },
			func(s *Store, rdb *redis.Client) {
				// another writer filled the day: 2 buckets, and the next id splits them
				rdb.HSet(ctx, s.keys.Dedupe("g", DayOf(5000)), "n", 2, "c", 64)
			},
			func(s *Store) error {
				m := &schemas.Message{ConvId: "g", ConvType: schemas.ConvType_CONV_TYPE_DIRECT, Kind: schemas.Kind_KIND_MESSAGE,
					ClientMsgId: "m1", Sender: "ann", Recipients: []string{"bob"}, ContentType: "text/plain", Body: []byte("x")}
				res, err := s.Sequence(ctx, "g", []*schemas.Message{m}, nil, 5000)
				if err == nil && res.Items[0].Seq != 1 {
					err = fmt.Errorf("sequenced as seq %d", res.Items[0].Seq)
				}
				return err
			},
			func(s *Store, rdb *redis.Client) error {
				if n := rdb.LLen(ctx, s.keys.Timeline("g")).Val(); n != 1 {
					return fmt.Errorf("timeline holds %d entries, want 1", n)
				}
				return nil
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rdb, prefix := testenv.Redis(t)
			g := newKeysGuard(t)
			rdb.AddHook(g)
			s, err := New(rdb, Config{Prefix: prefix, MaxDevices: 1})
			if err != nil {
				t.Fatal(err)
			}
			refused := 0
			rdb.AddHook(&onFirstScript{key: tc.key(s), do: func() { tc.stale(s, rdb) }})
			rdb.AddHook(&countRefusals{n: &refused})
			if err := tc.run(s); err != nil {
				t.Fatal(err)
			}
			if refused != 1 {
				t.Fatalf("the script refused %d times, want once (then run again)", refused)
			}
			if err := tc.check(s, rdb); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// countRefusals counts script answers OBDEVICES and OBDEDUPE.
type countRefusals struct{ n *int }

func (h *countRefusals) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countRefusals) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *countRefusals) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if redis.HasErrorPrefix(err, "OBDEVICES") || redis.HasErrorPrefix(err, "OBDEDUPE") {
			*h.n++
		}
		return err
	}
}
