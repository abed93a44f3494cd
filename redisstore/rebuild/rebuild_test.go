package rebuild

import (
	"context"
	"errors"
	"fmt"
	"github.com/offlinebox/offlinebox/redisstore"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/schemas"
)

// rbHistory is an in-memory history of one timeline per conversation: the
// records sequencing published, as the history sink would have stored
// them. Every epoch reads that timeline (how epochs share and split seqs
// is chstore's, tested there and in rebuild_clickhouse_test.go).
type rbHistory struct {
	recs map[string]map[uint64]*schemas.Sequenced
	// origins are the epochs rebuilds recorded, by conversation.
	origins map[string][][3]uint64
	// onRange, when set, runs before every Range (to race a rebuild).
	onRange func()
}

func (h *rbHistory) add(items ...*schemas.Sequenced) {
	for _, it := range items {
		conv := it.GetMessage().GetConvId()
		if h.recs[conv] == nil {
			h.recs[conv] = map[uint64]*schemas.Sequenced{}
		}
		h.recs[conv][it.GetSeq()] = it
	}
}

func (h *rbHistory) LatestEpoch(_ context.Context, conv string) (uint64, error) {
	var top uint64
	for _, r := range h.recs[conv] {
		top = max(top, r.GetEpoch())
	}
	for _, o := range h.origins[conv] {
		top = max(top, o[0])
	}
	return top, nil
}

func (h *rbHistory) RecordEpoch(_ context.Context, conv string, epoch, parent, base uint64) error {
	if h.origins == nil {
		h.origins = map[string][][3]uint64{}
	}
	h.origins[conv] = append(h.origins[conv], [3]uint64{epoch, parent, base})
	return nil
}

func (h *rbHistory) Range(_ context.Context, conv string, _, from, to uint64) ([]*schemas.Sequenced, error) {
	if h.onRange != nil {
		h.onRange()
	}
	var out []*schemas.Sequenced
	for s := from; s <= to; s++ {
		if r, ok := h.recs[conv][s]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

func (h *rbHistory) MaxSeq(_ context.Context, conv string, _ uint64) (uint64, error) {
	var top uint64
	for s := range h.recs[conv] {
		top = max(top, s)
	}
	return top, nil
}

func (h *rbHistory) MembershipChanges(_ context.Context, conv string, _, after uint64, limit int) ([]*schemas.Sequenced, error) {
	seqs := slices.Sorted(maps.Keys(h.recs[conv]))
	var out []*schemas.Sequenced
	for _, s := range seqs {
		k := h.recs[conv][s].GetMessage().GetKind()
		if s > after && (k == schemas.Kind_KIND_MEMBER_JOIN || k == schemas.Kind_KIND_MEMBER_LEAVE) && len(out) < limit {
			out = append(out, h.recs[conv][s])
		}
	}
	return out, nil
}

// historyOnly hides MembershipChanges.
type historyOnly struct{ HistorySource }

// rbSeed sequences a group's life through the real script and records
// what was published: founders join 40 days ago, messages (one @all, once
// the group is large), a join, a leave, messages up to now. Returns the
// history and the write time of the last record.
func rbSeed(t *testing.T, s *rig, conv string, now time.Time) *rbHistory {
	t.Helper()
	h := &rbHistory{recs: map[string]map[uint64]*schemas.Sequenced{}}
	g := schemas.ConvType_CONV_TYPE_GROUP
	msg := func(id string, kind schemas.Kind, users ...string) *schemas.Message {
		m := expMsg(conv, g, kind, id)
		if len(users) > 0 {
			m.Recipients = users
		}
		return m
	}
	type step struct {
		age time.Duration
		m   *schemas.Message
	}
	all := msg("all", schemas.Kind_KIND_MESSAGE)
	all.MentionAll, all.Mentions = true, []string{"bob"}
	steps := []step{
		{40 * expDay, msg("found", schemas.Kind_KIND_MEMBER_JOIN, "alice", "bob", "carol")},
		{35 * expDay, msg("m1", schemas.Kind_KIND_MESSAGE)},
		{20 * expDay, msg("join", schemas.Kind_KIND_MEMBER_JOIN, "dave", "erin")},
		{10 * expDay, all},
		{5 * expDay, msg("leave", schemas.Kind_KIND_MEMBER_LEAVE, "carol")},
		{2 * expDay, msg("m2", schemas.Kind_KIND_MESSAGE)},
		{time.Hour, msg("m3", schemas.Kind_KIND_MESSAGE)},
	}
	for _, st := range steps {
		res, err := s.Sequence(context.Background(), conv, []*schemas.Message{st.m}, nil, now.Add(-st.age).UnixMilli())
		if err != nil || res.Items[0].Status != redisstore.SeqNew {
			t.Fatalf("seed %s: %+v (err %v)", st.m.GetClientMsgId(), res, err)
		}
		h.add(res.Items[0].Sequenced)
	}
	return h
}

// rbSnapshot is every conversation key a rebuild restores.
type rbSnapshot struct {
	meta    map[string]string
	tl      []string
	members map[string]string
	roles   map[string]string
	past    map[string]string
	all     []string
}

func rbSnap(t *testing.T, s *rig, conv string) rbSnapshot {
	t.Helper()
	ctx := context.Background()
	var sn rbSnapshot
	var err error
	if sn.meta, err = s.rdb.HGetAll(ctx, s.keys.ConvMeta(conv)).Result(); err != nil {
		t.Fatal(err)
	}
	sn.tl, _ = s.rdb.LRange(ctx, s.keys.Timeline(conv), 0, -1).Result()
	sn.members, _ = s.rdb.HGetAll(ctx, s.keys.Members(conv)).Result()
	sn.roles, _ = s.rdb.HGetAll(ctx, s.keys.Roles(conv)).Result()
	sn.past, _ = s.rdb.HGetAll(ctx, s.keys.PastMembers(conv)).Result()
	sn.all, _ = s.rdb.ZRange(ctx, s.keys.MentionAll(conv), 0, -1).Result()
	return sn
}

func TestRebuildRestoresALostConversationIdenticalToTheOriginal(t *testing.T) {
	cases := []struct {
		name     string
		lose     func(s *rig, conv string) []string // keys to delete
		newEpoch bool
	}{
		{"timeline lost, meta kept", func(s *rig, c string) []string { return []string{s.keys.Timeline(c)} }, false},
		{"every conversation key lost", func(s *rig, c string) []string {
			return []string{s.keys.ConvMeta(c), s.keys.Timeline(c), s.keys.Members(c), s.keys.MentionAll(c),
				s.keys.Roles(c), s.keys.PastMembers(c)}
		}, true},
		{"timeline and members lost", func(s *rig, c string) []string {
			return []string{s.keys.Timeline(c), s.keys.Members(c), s.keys.Roles(c), s.keys.PastMembers(c)}
		}, false},
		{"meta lost, members kept", func(s *rig, c string) []string {
			return []string{s.keys.ConvMeta(c), s.keys.Timeline(c)}
		}, true},
		{"roles lost, members kept", func(s *rig, c string) []string { return []string{s.keys.Roles(c)} }, false},
		{"timeline and roles lost, meta and members kept", func(s *rig, c string) []string {
			return []string{s.keys.Timeline(c), s.keys.Roles(c)}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := rbStore(t)
			ctx := context.Background()
			h := rbSeed(t, s, "g1", expNow)
			// Expiry ran: the 40- and 35-day-old records left the timeline.
			if _, err := s.ExpireConversation(ctx, "g1", expNow, redisstore.Retention{}, 100); err != nil {
				t.Fatal(err)
			}
			before := rbSnap(t, s, "g1")
			if len(before.tl) != 5 || len(before.all) != 1 {
				t.Fatalf("seeded timeline of %d entries, %d @all; want 5 and 1", len(before.tl), len(before.all))
			}
			if err := s.rdb.Del(ctx, tc.lose(s, "g1")...).Err(); err != nil {
				t.Fatal(err)
			}
			res, err := s.Rebuild(ctx, h, "g1", Options{Now: expNow})
			if err != nil {
				t.Fatal(err)
			}
			after := rbSnap(t, s, "g1")
			if !slices.Equal(after.tl, before.tl) {
				t.Fatalf("rebuilt timeline differs: %d entries, want %d identical", len(after.tl), len(before.tl))
			}
			oldEpoch := before.meta["epoch"]
			if res.NewEpoch != tc.newEpoch || (after.meta["epoch"] != oldEpoch) != tc.newEpoch {
				t.Fatalf("epoch %s -> %s (reported new: %v), want new: %v", oldEpoch, after.meta["epoch"], res.NewEpoch, tc.newEpoch)
			}
			if tc.newEpoch && after.meta["epoch"] <= oldEpoch {
				t.Fatalf("new epoch %s is not above the old %s", after.meta["epoch"], oldEpoch)
			}
			delete(before.meta, "epoch")
			delete(after.meta, "epoch")
			delete(before.meta, "lgc")
			if !maps.Equal(after.meta, before.meta) {
				t.Fatalf("rebuilt meta %v, want %v", after.meta, before.meta)
			}
			if !maps.Equal(after.members, before.members) || !slices.Equal(after.all, before.all) {
				t.Fatalf("members %v @all %v, want %v and %v", after.members, after.all, before.members, before.all)
			}
			if !maps.Equal(after.roles, before.roles) || !maps.Equal(after.past, before.past) || len(before.past) == 0 {
				t.Fatalf("roles %v, former members %v; want %v and %v", after.roles, after.past, before.roles, before.past)
			}
			for _, k := range []string{s.keys.RebuildTimeline("g1"), s.keys.RebuildMembers("g1"),
				s.keys.RebuildRoles("g1"), s.keys.RebuildPastMembers("g1")} {
				if n, _ := s.rdb.Exists(ctx, k).Result(); n != 0 {
					t.Fatalf("staging key %s left behind", k)
				}
			}
		})
	}
}

func TestRebuildRestoresDedupeSoAResendGetsItsOriginalSeq(t *testing.T) {
	s := rbStore(t)
	ctx := context.Background()
	now := time.Now() // dedupe buckets carry Redis's own expiry
	h := rbSeed(t, s, "g1", now)
	keys, _ := s.rdb.Keys(ctx, s.keys.Prefix+"*").Result()
	if err := s.rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := s.Rebuild(ctx, h, "g1", Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if res.Dedupe != 3 {
		t.Fatalf("restored %d dedupe ids, want the 3 records whose buckets are within the 7-day window", res.Dedupe)
	}
	resend := expMsg("g1", schemas.ConvType_CONV_TYPE_GROUP, schemas.Kind_KIND_MESSAGE, "m2")
	out, err := s.Sequence(ctx, "g1", []*schemas.Message{resend}, nil, now.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if it := out.Items[0]; it.Status != redisstore.SeqDuplicate || it.Sequenced.GetSeq() != 6 {
		t.Fatalf("resend after rebuild: %+v, want a duplicate of seq 6", it)
	}
}

func TestRebuildRefusesToLowerTheCounterUnlessForced(t *testing.T) {
	s := rbStore(t)
	ctx := context.Background()
	h := rbSeed(t, s, "g1", expNow)
	delete(h.recs["g1"], 7) // the history sink has not stored seq 7 yet
	s.rdb.Del(ctx, s.keys.Timeline("g1"))
	_, err := s.Rebuild(ctx, h, "g1", Options{Now: expNow})
	if !errors.Is(err, ErrHistoryBehind) {
		t.Fatalf("rebuild with the history behind: %v, want ErrHistoryBehind", err)
	}
	if n, _ := s.rdb.HGet(ctx, s.keys.ConvMeta("g1"), "seq").Int(); n != 7 {
		t.Fatalf("refused rebuild changed the counter to %d", n)
	}
	res, err := s.Rebuild(ctx, h, "g1", Options{Now: expNow, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	seq, first := expMeta(t, s, "g1")
	if !res.NewEpoch || seq != 6 || first != 3 {
		t.Fatalf("forced rebuild: %+v, meta seq %d first %d; want a new epoch, seq 6, first 3", res, seq, first)
	}
}

// A conversation a restore held is refused by sequencing until a rebuild,
// which always gives it a new epoch (even when the counter matches the
// history: im.sequenced may hold more than the history has) and releases
// it: the next record is sequenced again.
func TestARebuildReleasesAHeldConversationInANewEpoch(t *testing.T) {
	s := rbStore(t)
	ctx := context.Background()
	h := rbSeed(t, s, "g1", expNow)
	if _, err := s.HoldConversation(ctx, "g1", "restore: test"); err != nil {
		t.Fatal(err)
	}
	next := expMsg("g1", schemas.ConvType_CONV_TYPE_GROUP, schemas.Kind_KIND_MESSAGE, "after")
	_, err := s.Sequence(ctx, "g1", []*schemas.Message{next}, nil, expNow.UnixMilli())
	if !redisstore.Permanent(err) || !strings.Contains(err.Error(), refusalHeld) {
		t.Fatalf("sequencing a held conversation: %v, want a permanent %s", err, refusalHeld)
	}
	before := rbSnap(t, s, "g1")
	res, err := s.Rebuild(ctx, h, "g1", Options{Now: expNow})
	if err != nil {
		t.Fatal(err)
	}
	if after := rbSnap(t, s, "g1"); !res.NewEpoch || after.meta["epoch"] <= before.meta["epoch"] {
		t.Fatalf("rebuild of a held conversation: %+v, epoch %s -> %s; want a new, higher one", res,
			before.meta["epoch"], after.meta["epoch"])
	}
	if n, _ := s.rdb.Exists(ctx, s.keys.Held("g1")).Result(); n != 0 {
		t.Fatal("the hold is still set after the rebuild")
	}
	out, err := s.Sequence(ctx, "g1", []*schemas.Message{next}, nil, expNow.UnixMilli())
	if err != nil || out.Items[0].Status != redisstore.SeqNew || out.Items[0].Seq != 8 {
		t.Fatalf("sequencing after the rebuild: %+v (err %v), want seq 8 new", out, err)
	}
}

// A restore that holds a conversation after a rebuild read it unheld (the
// rebuild planned to keep its epoch) races the rebuild: the commit refuses
// rather than delete a hold it did not see, the conversation stays held in
// its epoch, and the next rebuild reads the hold and releases it in a new
// epoch.
func TestARebuildRacedByAHoldLeavesItAndTheNextRunReleasesItInANewEpoch(t *testing.T) {
	s := rbStore(t)
	ctx := context.Background()
	h := rbSeed(t, s, "g1", expNow)
	before := rbSnap(t, s, "g1")
	held := false
	h.onRange = func() { // after the rebuild read the meta, before its commit
		if held {
			return
		}
		held = true
		if _, err := s.HoldConversation(ctx, "g1", "restore: meanwhile"); err != nil {
			t.Error(err)
		}
	}
	_, err := s.Rebuild(ctx, h, "g1", Options{Now: expNow})
	if !held {
		t.Fatal("the rebuild read no history: the hold was never set between its read and its commit")
	}
	if !errors.Is(err, ErrRaced) {
		t.Fatalf("rebuild raced by a hold: %v, want ErrRaced", err)
	}
	if why, ok, err := s.HeldReason(ctx, "g1"); err != nil || !ok || why != "restore: meanwhile" {
		t.Fatalf("after the raced rebuild the hold is %q (set %v, %v), want the restore's", why, ok, err)
	}
	if after := rbSnap(t, s, "g1"); after.meta["epoch"] != before.meta["epoch"] {
		t.Fatalf("the raced rebuild moved the epoch %s -> %s", before.meta["epoch"], after.meta["epoch"])
	}

	h.onRange = nil
	res, err := s.Rebuild(ctx, h, "g1", Options{Now: expNow})
	if err != nil {
		t.Fatal(err)
	}
	if after := rbSnap(t, s, "g1"); !res.NewEpoch || after.meta["epoch"] <= before.meta["epoch"] {
		t.Fatalf("rebuild after the race: %+v, epoch %s -> %s; want a new, higher one", res,
			before.meta["epoch"], after.meta["epoch"])
	}
	if _, ok, err := s.HeldReason(ctx, "g1"); err != nil || ok {
		t.Fatalf("the hold is still set after the rebuild that read it (%v)", err)
	}
}

func TestRebuildStartsTheTimelineAfterAHoleInTheHistory(t *testing.T) {
	s := rbStore(t)
	ctx := context.Background()
	h := rbSeed(t, s, "g1", expNow)
	delete(h.recs["g1"], 4)
	s.rdb.Del(ctx, s.keys.ConvMeta("g1"), s.keys.Timeline("g1"))
	res, err := s.Rebuild(ctx, h, "g1", Options{Now: expNow})
	if err != nil {
		t.Fatal(err)
	}
	tl := timelineSeqs(t, s, "g1")
	if res.Hole != 4 || res.First != 5 || !slices.Equal(tl, []uint64{5, 6, 7}) {
		t.Fatalf("result %+v, timeline %v; want hole 4 and the timeline 5..7", res, tl)
	}
}

func TestRebuildSaysWhenMembersCannotBeKnown(t *testing.T) {
	cases := []struct {
		name string
		src  func(h *rbHistory) HistorySource
		want MembersOutcome
	}{
		{"founding record kept", func(h *rbHistory) HistorySource { return h }, MembersRestored},
		{"founding record dropped by retention", func(h *rbHistory) HistorySource { delete(h.recs["g1"], 1); return h }, MembersUnknown},
		{"source without membership records", func(h *rbHistory) HistorySource { return historyOnly{h} }, MembersUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := rbStore(t)
			ctx := context.Background()
			h := rbSeed(t, s, "g1", expNow)
			s.rdb.Del(ctx, s.keys.ConvMeta("g1"), s.keys.Timeline("g1"), s.keys.Members("g1"))
			res, err := s.Rebuild(ctx, tc.src(h), "g1", Options{Now: expNow})
			if err != nil {
				t.Fatal(err)
			}
			members, _ := s.rdb.HKeys(ctx, s.keys.Members("g1")).Result()
			sort.Strings(members)
			want := map[MembersOutcome][]string{MembersRestored: {"alice", "bob", "dave", "erin"}}[tc.want]
			if res.Members != tc.want || !slices.Equal(members, want) {
				t.Fatalf("members %v (outcome %v), want %v (outcome %v)", members, res.Members, want, tc.want)
			}
		})
	}
}

func TestRebuildOfADirectConversationRestoresItsParticipants(t *testing.T) {
	s := rbStore(t)
	ctx := context.Background()
	h := &rbHistory{recs: map[string]map[uint64]*schemas.Sequenced{}}
	for i, age := range []time.Duration{50 * expDay, expDay} {
		m := expMsg("d1", schemas.ConvType_CONV_TYPE_DIRECT, schemas.Kind_KIND_MESSAGE, fmt.Sprint("d", i))
		res, err := s.Sequence(ctx, "d1", []*schemas.Message{m}, nil, expNow.Add(-age).UnixMilli())
		if err != nil {
			t.Fatal(err)
		}
		h.add(res.Items[0].Sequenced)
	}
	before := rbSnap(t, s, "d1")
	s.rdb.Del(ctx, s.keys.ConvMeta("d1"), s.keys.Timeline("d1"), s.keys.Members("d1"))
	if _, err := s.Rebuild(ctx, h, "d1", Options{Now: expNow}); err != nil {
		t.Fatal(err)
	}
	after := rbSnap(t, s, "d1")
	if !maps.Equal(after.members, before.members) || after.meta["mver"] != before.meta["mver"] || after.meta["nmem"] != "2" {
		t.Fatalf("members %v meta %v, want %v as before", after.members, after.meta, before.members)
	}
	// Expiry had not run before the loss; the rebuilt timeline starts where
	// it would have left it.
	if tl := timelineSeqs(t, s, "d1"); !slices.Equal(tl, []uint64{2}) {
		t.Fatalf("timeline %v, want only seq 2 (seq 1 is past the window)", tl)
	}
}

func TestRebuildChangesNothingWhenTheConversationIsWrittenMeanwhile(t *testing.T) {
	s := rbStore(t)
	ctx := context.Background()
	h := rbSeed(t, s, "g1", expNow)
	s.rdb.Del(ctx, s.keys.ConvMeta("g1"), s.keys.Timeline("g1"))
	raced := false
	h.onRange = func() {
		if raced {
			return
		}
		raced = true
		m := expMsg("g1", schemas.ConvType_CONV_TYPE_GROUP, schemas.Kind_KIND_MESSAGE, "meanwhile")
		if _, err := s.Sequence(ctx, "g1", []*schemas.Message{m}, nil, expNow.UnixMilli()); err != nil {
			t.Error(err)
		}
	}
	_, err := s.Rebuild(ctx, h, "g1", Options{Now: expNow})
	if !errors.Is(err, ErrRaced) {
		t.Fatalf("rebuild raced by a write: %v, want ErrRaced", err)
	}
	// The write that raced it is still what the store holds.
	after := rbSnap(t, s, "g1")
	if len(after.tl) != 1 || after.meta["seq"] != "1" {
		t.Fatalf("store holds %d entries, seq %s; want the one raced write", len(after.tl), after.meta["seq"])
	}
	if n, _ := s.rdb.Exists(ctx, s.keys.RebuildTimeline("g1")).Result(); n != 0 {
		t.Fatal("a refused rebuild left its staging behind")
	}
}

func timelineSeqs(t *testing.T, s *rig, conv string) []uint64 {
	t.Helper()
	raw, err := s.rdb.LRange(context.Background(), s.keys.Timeline(conv), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]uint64, len(raw))
	for i, r := range raw {
		e, err := redisstore.DecodeEntry([]byte(r), conv, 0)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = e.GetSeq()
	}
	return out
}

// Rows the history wrote before it kept a join's role and a record's
// authority read as neither: their rebuild gives the founder ownership
// and nobody an admin role, still one owner and roles held by members
// only (what verify checks).
func TestARebuildOfRowsWithoutRolesGivesTheFounderOwnershipAndNoAdmins(t *testing.T) {
	g := schemas.ConvType_CONV_TYPE_GROUP
	join := func(id string, role schemas.Role, users ...string) *schemas.Message {
		m := expMsg("g1", g, schemas.Kind_KIND_MEMBER_JOIN, id)
		m.Recipients, m.Role = users, role
		return m
	}
	life := []*schemas.Message{
		join("found", schemas.Role_ROLE_UNSPECIFIED, "alice", "bob", "carol"),
		join("bob-admin", schemas.Role_ROLE_ADMIN, "bob"),
		join("dave-admin", schemas.Role_ROLE_ADMIN, "dave"),
		join("carol-owns", schemas.Role_ROLE_OWNER, "carol"),
	}
	cases := []struct {
		name  string
		strip bool
		want  map[string]string
	}{
		{"rows that keep roles", false, map[string]string{"carol": "o", "alice": "a", "bob": "a", "dave": "a"}},
		{"rows written before roles were kept", true, map[string]string{"alice": "o"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := rbStore(t)
			ctx := context.Background()
			h := &rbHistory{recs: map[string]map[uint64]*schemas.Sequenced{}}
			for i, m := range life {
				res, err := s.Sequence(ctx, "g1", []*schemas.Message{m}, nil, expNow.UnixMilli()+int64(i))
				if err != nil || res.Items[0].Status != redisstore.SeqNew {
					t.Fatalf("sequence %s: %+v (err %v)", m.GetClientMsgId(), res, err)
				}
				rec := res.Items[0].Sequenced
				if tc.strip {
					rec.Message.Role, rec.Message.Authority = schemas.Role_ROLE_UNSPECIFIED, schemas.Authority_AUTHORITY_SENDER
				}
				h.add(rec)
			}
			lost := []string{s.keys.ConvMeta("g1"), s.keys.Timeline("g1"), s.keys.Members("g1"), s.keys.Roles("g1"), s.keys.PastMembers("g1")}
			if err := s.rdb.Del(ctx, lost...).Err(); err != nil {
				t.Fatal(err)
			}
			if res, err := s.Rebuild(ctx, h, "g1", Options{Now: expNow}); err != nil || res.Members != MembersRestored {
				t.Fatalf("rebuild = %+v, %v; want the members restored", res, err)
			}
			roles, strangers, err := s.GroupRoles(ctx, "g1")
			if err != nil || len(strangers) != 0 || !maps.Equal(roles, tc.want) {
				t.Fatalf("rebuilt roles %v (held by non-members %v, err %v), want %v", roles, strangers, err, tc.want)
			}
		})
	}
}
