package redisstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/internal/storetest"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
)

// expDay, expNow, expMsg: internal/storetest's, shared with rebuild's
// tests (expNow is the fake "now" retention is measured against).
const expDay = storetest.Day

var (
	expNow = storetest.Now
	expMsg = storetest.Msg
)

func expStore(t *testing.T) *Store {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	s, err := New(rdb, Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// expEntry is one record to sequence, written age before expNow.
type expEntry struct {
	age  time.Duration
	kind schemas.Kind
}

// expSeed sequences entries (oldest first) through the real sequencing
// script and returns the raw timeline it produced.
func expSeed(t *testing.T, s *Store, conv string, ct schemas.ConvType, entries []expEntry) []string {
	t.Helper()
	ctx := context.Background()
	for i, e := range entries {
		m := expMsg(conv, ct, e.kind, fmt.Sprintf("%s-%d", conv, i))
		if _, err := s.Sequence(ctx, conv, []*schemas.Message{m}, nil, expNow.Add(-e.age).UnixMilli()); err != nil {
			t.Fatalf("seed %s entry %d: %v", conv, i, err)
		}
	}
	raw, err := s.rdb.LRange(ctx, s.keys.Timeline(conv), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != len(entries) {
		t.Fatalf("seeded %d entries, timeline holds %d", len(entries), len(raw))
	}
	return raw
}

func expMeta(t *testing.T, s *Store, conv string) (seq, first uint64) {
	t.Helper()
	return storetest.Meta(t, s.rdb, s.keys.ConvMeta(conv))
}

func TestExpireConversationRemovesExactlyTheEntriesPastTheirWindow(t *testing.T) {
	msg, join := schemas.Kind_KIND_MESSAGE, schemas.Kind_KIND_MEMBER_JOIN
	group, direct := schemas.ConvType_CONV_TYPE_GROUP, schemas.ConvType_CONV_TYPE_DIRECT
	ages := []expEntry{{41 * expDay, msg}, {31 * expDay, msg}, {30 * expDay, msg},
		{29 * expDay, msg}, {2 * expDay, msg}, {time.Hour, msg}}
	cases := []struct {
		name    string
		ct      schemas.ConvType
		r       Retention
		entries []expEntry
		kept    int // entries that stay: the newest `kept`
	}{
		{"default window keeps an entry exactly 30 days old", group, Retention{}, ages, 4},
		{"a group window of 10 days", group,
			Retention{ConvTypes: map[schemas.ConvType]time.Duration{group: 10 * expDay}}, ages, 2},
		{"the group window does not apply to a direct conversation", direct,
			Retention{ConvTypes: map[schemas.ConvType]time.Duration{group: 10 * expDay}}, ages, 4},
		{"a window below the floor keeps 3 days", group, Retention{Window: time.Hour}, ages, 2},
		{"nothing past the window: nothing removed", group, Retention{Window: 60 * expDay}, ages, 6},
		{"a short kind window at the head goes first", group,
			Retention{Kinds: map[schemas.Kind]time.Duration{join: 5 * expDay}},
			[]expEntry{{20 * expDay, join}, {10 * expDay, join}, {9 * expDay, msg}, {8 * expDay, join}}, 2},
		{"a long kind window at the head holds back what follows", group,
			Retention{Kinds: map[schemas.Kind]time.Duration{join: 100 * expDay}},
			[]expEntry{{50 * expDay, join}, {40 * expDay, msg}, {35 * expDay, msg}}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := expStore(t)
			ctx := context.Background()
			raw := expSeed(t, s, "c1", tc.ct, tc.entries)
			seqBefore, _ := expMeta(t, s, "c1")
			got, err := s.ExpireConversation(ctx, "c1", expNow, tc.r, 100)
			if err != nil {
				t.Fatal(err)
			}
			want := raw[len(raw)-tc.kept:]
			after, err := s.rdb.LRange(ctx, s.keys.Timeline("c1"), 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(after, want) {
				t.Fatalf("timeline holds %d entries, want the newest %d unchanged", len(after), tc.kept)
			}
			if got.Timeline != len(raw)-tc.kept {
				t.Fatalf("reported %d removed, want %d", got.Timeline, len(raw)-tc.kept)
			}
			seq, first := expMeta(t, s, "c1")
			if seq != seqBefore || first != seq+1-uint64(tc.kept) {
				t.Fatalf("meta seq %d first %d, want seq %d first %d", seq, first, seqBefore, seqBefore+1-uint64(tc.kept))
			}
			again, err := s.ExpireConversation(ctx, "c1", expNow, tc.r, 100)
			if err != nil || again.Timeline != 0 {
				t.Fatalf("second run removed %d (err %v), want nothing", again.Timeline, err)
			}
		})
	}
}

func TestExpireConversationIgnoresDeviceAcks(t *testing.T) {
	s := expStore(t)
	ctx := context.Background()
	msg := schemas.Kind_KIND_MESSAGE
	raw := expSeed(t, s, "c1", schemas.ConvType_CONV_TYPE_GROUP,
		[]expEntry{{40 * expDay, msg}, {35 * expDay, msg}, {10 * expDay, msg}, {1 * expDay, msg}})
	// The phone acked everything, the laptop nothing: neither decides.
	if err := s.rdb.HSet(ctx, s.keys.Cursor("bob", "phone"), "c1", 4).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.HSet(ctx, s.keys.Cursor("bob", "laptop"), "c1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExpireConversation(ctx, "c1", expNow, Retention{}, 100); err != nil {
		t.Fatal(err)
	}
	after, _ := s.rdb.LRange(ctx, s.keys.Timeline("c1"), 0, -1).Result()
	if !slices.Equal(after, raw[2:]) {
		t.Fatalf("timeline after expiry holds %d entries, want the 2 within the window", len(after))
	}
	if _, first := expMeta(t, s, "c1"); first != 3 {
		t.Fatalf("first = %d, want 3: the laptop's cursor 0 is now below the retention floor", first)
	}
}

func TestExpireConversationWorksInBoundedSteps(t *testing.T) {
	s := expStore(t)
	ctx := context.Background()
	var entries []expEntry
	for i := range 7 {
		entries = append(entries, expEntry{time.Duration(60-i) * expDay, schemas.Kind_KIND_MESSAGE})
	}
	expSeed(t, s, "c1", schemas.ConvType_CONV_TYPE_GROUP, entries)
	var calls []int
	for {
		got, err := s.ExpireConversation(ctx, "c1", expNow, Retention{}, 3)
		if err != nil {
			t.Fatal(err)
		}
		if got.Timeline == 0 {
			break
		}
		calls = append(calls, got.Timeline)
	}
	if !slices.Equal(calls, []int{3, 3, 1}) {
		t.Fatalf("removed per call %v, want at most 3 per call, 7 in all", calls)
	}
	seq, first := expMeta(t, s, "c1")
	if first != seq+1 {
		t.Fatalf("emptied timeline: first %d, want seq+1 = %d", first, seq+1)
	}
	// Sequencing goes on after the floor.
	m := expMsg("c1", schemas.ConvType_CONV_TYPE_GROUP, schemas.Kind_KIND_MESSAGE, "after")
	if _, err := s.Sequence(ctx, "c1", []*schemas.Message{m}, nil, expNow.UnixMilli()); err != nil {
		t.Fatal(err)
	}
	raw, _ := s.rdb.LRange(ctx, s.keys.Timeline("c1"), 0, -1).Result()
	if len(raw) != 1 {
		t.Fatalf("timeline holds %d entries after a new message, want 1", len(raw))
	}
	if e, err := DecodeEntry([]byte(raw[0]), "c1", 0); err != nil || e.Seq != seq+1 {
		t.Fatalf("new entry %v (err %v), want seq %d", e, err, seq+1)
	}
}

func TestExpiryPopScriptRefusesAStalePlan(t *testing.T) {
	s := expStore(t)
	ctx := context.Background()
	expSeed(t, s, "c1", schemas.ConvType_CONV_TYPE_GROUP,
		[]expEntry{{40 * expDay, schemas.Kind_KIND_MESSAGE}, {39 * expDay, schemas.Kind_KIND_MESSAGE}})
	epoch, _ := s.rdb.HGet(ctx, s.keys.ConvMeta("c1"), "epoch").Result()
	keys := []string{s.keys.ConvMeta("c1"), s.keys.Timeline("c1"), s.keys.Notices("c1")}
	cutoff := expNow.UnixMilli()
	young := expNow.Add(-40 * expDay).UnixMilli() // the head is not below it
	cases := []struct {
		name         string
		epoch, first string
		n            int
		cutoff       int64
		want         int
	}{
		{"another epoch", "1", "1", 2, cutoff, 0},
		{"first moved on", epoch, "2", 2, cutoff, 0},
		{"entries not below the cutoff", epoch, "1", 2, young, 0},
		{"a plan that fits", epoch, "1", 2, cutoff, 2},
		{"the same plan replayed", epoch, "1", 2, cutoff, 0},
	}
	for _, tc := range cases {
		n, err := expiryPopTimelineScript.Run(ctx, s.rdb, keys, tc.epoch, tc.first, tc.n, tc.cutoff).Int()
		if err != nil || n != tc.want {
			t.Fatalf("%s: popped %d (err %v), want %d", tc.name, n, err, tc.want)
		}
	}
}

func TestExpireConversationTrimsAllMentionsOfLargeGroups(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	s, err := New(rdb, Config{Prefix: prefix, LargeGroupThreshold: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g := schemas.ConvType_CONV_TYPE_GROUP
	join := expMsg("big", g, schemas.Kind_KIND_MEMBER_JOIN, "j")
	join.Recipients = []string{"alice", "b", "c", "d"}
	if _, err := s.Sequence(ctx, "big", []*schemas.Message{join}, nil, expNow.Add(-50*expDay).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	for i, age := range []time.Duration{45 * expDay, 31 * expDay, 20 * expDay} {
		m := expMsg("big", g, schemas.Kind_KIND_MESSAGE, fmt.Sprint("all", i))
		m.MentionAll = true
		if _, err := s.Sequence(ctx, "big", []*schemas.Message{m}, nil, expNow.Add(-age).UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ExpireConversation(ctx, "big", expNow, Retention{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	left, _ := s.rdb.ZRange(ctx, s.keys.MentionAll("big"), 0, -1).Result()
	if got.MentionAll != 2 || !slices.Equal(left, []string{"4"}) {
		t.Fatalf("removed %d @all references, %v left; want 2 removed and seq 4 left", got.MentionAll, left)
	}
}

func TestExpireDedupeDropsBucketsWhenSequencingStopsConsultingThem(t *testing.T) {
	s := expStore(t)
	ctx := context.Background()
	// Written now by the machine's clock, so Redis's own expiry has not
	// removed the bucket yet; expiry is then run at fake later times.
	written := time.Now()
	m := expMsg("c1", schemas.ConvType_CONV_TYPE_GROUP, schemas.Kind_KIND_MESSAGE, "m1")
	if _, err := s.Sequence(ctx, "c1", []*schemas.Message{m}, nil, written.UnixMilli()); err != nil {
		t.Fatal(err)
	}
	day := DayOf(written.UnixMilli())
	endOfWindow := time.UnixMilli((day + 1 + s.DedupeDays()) * 86_400_000)
	cases := []struct {
		now  time.Time
		gone bool
	}{
		{written, false},
		{endOfWindow.Add(-time.Millisecond), false},
		{endOfWindow, true},
	}
	for _, tc := range cases {
		gone, err := s.ExpireDedupe(ctx, "c1", day, tc.now)
		if err != nil {
			t.Fatal(err)
		}
		exists, _ := s.rdb.Exists(ctx, s.keys.Dedupe("c1", day)).Result()
		if gone != tc.gone || (exists == 0) != tc.gone {
			t.Fatalf("at %s: reported gone=%v, bucket exists=%d; want gone=%v", tc.now, gone, exists, tc.gone)
		}
	}
}

func TestConcurrentExpiryRemovesEachEntryOnce(t *testing.T) {
	s := expStore(t)
	ctx := context.Background()
	var entries []expEntry
	for i := range 40 {
		entries = append(entries, expEntry{time.Duration(60-i) * expDay, schemas.Kind_KIND_MESSAGE})
	}
	raw := expSeed(t, s, "c1", schemas.ConvType_CONV_TYPE_GROUP, entries) // 30 past the window
	removed := make(chan int, 4)
	for range 4 {
		go func() {
			total := 0
			for range 100 { // bounded: a bug must fail the test, not hang it
				got, err := s.ExpireConversation(ctx, "c1", expNow, Retention{}, 3)
				if err != nil {
					t.Error(err)
					break
				}
				total += got.Timeline
				if first, _ := s.rdb.HGet(ctx, s.keys.ConvMeta("c1"), "first").Int(); first >= 31 {
					break
				}
			}
			removed <- total
		}()
	}
	sum := 0
	for range 4 {
		sum += <-removed
	}
	after, _ := s.rdb.LRange(ctx, s.keys.Timeline("c1"), 0, -1).Result()
	if sum != 30 || !slices.Equal(after, raw[30:]) {
		t.Fatalf("4 expirers together removed %d, %d entries left; want 30 removed and the newest 10 unchanged", sum, len(after))
	}
}
