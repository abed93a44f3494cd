package redisstore

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"
)

func TestExpireMentionsKeepsEachReferenceForItsConversationTypesWindow(t *testing.T) {
	s := expStore(t)
	ctx := context.Background()
	at := func(age time.Duration) int64 { return expNow.Add(-age).UnixMilli() }
	updates := []InboxUpdate{
		{User: "bob", Conv: "d1", Form: InboxDirect, Events: []InboxEvent{
			{InboxMentioned, 1, at(40 * expDay)}, {InboxMentioned, 2, at(20 * expDay)}, {InboxMentioned, 3, at(5 * expDay)}}},
		{User: "bob", Conv: "g1", Form: InboxGroup, Events: []InboxEvent{
			{InboxMentioned, 1, at(40 * expDay)}, {InboxMentioned, 2, at(20 * expDay)}, {InboxMentioned, 3, at(5 * expDay)}}},
	}
	if _, errs := s.ApplyInboxes(ctx, updates); errs[0] != nil || errs[1] != nil {
		t.Fatalf("seed inboxes: %v", errs)
	}
	// A reference whose conversation the inbox does not know: kept by the
	// longer window.
	if err := s.rdb.ZAdd(ctx, s.keys.Mentions("bob"),
		redis.Z{Score: float64(at(35 * expDay)), Member: "x1:1"},
		redis.Z{Score: float64(at(15 * expDay)), Member: "x1:2"}).Err(); err != nil {
		t.Fatal(err)
	}
	r := Retention{ConvTypes: map[schemas.ConvType]time.Duration{
		schemas.ConvType_CONV_TYPE_DIRECT: 30 * expDay,
		schemas.ConvType_CONV_TYPE_GROUP:  10 * expDay,
	}}
	for _, max := range []int{1, 100} { // one per call, then all at once
		n, err := s.ExpireMentions(ctx, "bob", expNow, r, max)
		if err != nil {
			t.Fatal(err)
		}
		left, _ := s.rdb.ZRange(ctx, s.keys.Mentions("bob"), 0, -1).Result()
		sort.Strings(left)
		want := []string{"d1:2", "d1:3", "g1:3", "x1:2"}
		if !slices.Equal(left, want) {
			t.Fatalf("max %d: lane holds %v, want %v", max, left, want)
		}
		if wantN := map[int]int{1: 4, 100: 0}[max]; n != wantN {
			t.Fatalf("max %d: reported %d removed, want %d", max, n, wantN)
		}
	}
}

func TestEvictDevicesDropsIdleAndLeastRecentlyUsedDevicesWithTheirCursors(t *testing.T) {
	s := expStore(t)
	ctx := context.Background()
	used := map[string]time.Duration{"old": 40 * expDay, "a": 5 * expDay, "b": 4 * expDay, "c": 3 * expDay, "d": 2 * expDay}
	for dev, age := range used {
		if _, err := s.AckDevice(ctx, "bob", dev, []AckItem{{Conv: "c1", Seq: 3, Epoch: 1}}, expNow.Add(-age).UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	// The operator lowered the device limit to 3 since.
	small, err := New(s.rdb, Config{Prefix: s.keys.Prefix, MaxDevices: 3})
	if err != nil {
		t.Fatal(err)
	}
	n, err := small.EvictDevices(ctx, "bob", expNow.Add(-30*expDay), 100)
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := s.rdb.ZRange(ctx, s.keys.Devices("bob"), 0, -1).Result()
	evicted, _ := s.rdb.SMembers(ctx, s.keys.Evicted("bob")).Result()
	sort.Strings(evicted)
	if n != 2 || !slices.Equal(kept, []string{"b", "c", "d"}) || !slices.Equal(evicted, []string{"a", "old"}) {
		t.Fatalf("evicted %d %v, kept %v; want old (idle) and a (least recently used), keep b c d", n, evicted, kept)
	}
	for dev := range used {
		exists, _ := s.rdb.Exists(ctx, s.keys.Cursor("bob", dev)).Result()
		if wantGone := slices.Contains(evicted, dev); (exists == 0) != wantGone {
			t.Fatalf("cursor of %s exists=%d, want gone=%v", dev, exists, wantGone)
		}
	}
	if n, err := small.EvictDevices(ctx, "bob", expNow.Add(-30*expDay), 100); err != nil || n != 0 {
		t.Fatalf("second run evicted %d (err %v), want nothing", n, err)
	}
}

func TestSweepLeaseLetsOneProcessScanANodeAtATime(t *testing.T) {
	s := expStore(t)
	ctx := context.Background()
	const lease, every = time.Minute, time.Hour
	now := expNow
	a, err := s.AcquireSweep(ctx, "n1", "A", lease, every, now)
	if err != nil || !a.Held || a.Cursor != 0 {
		t.Fatalf("A: %+v (err %v), want the lease on a fresh job", a, err)
	}
	b, err := s.AcquireSweep(ctx, "n1", "B", lease, every, now)
	if err != nil || b.Held {
		t.Fatalf("B: %+v (err %v), want no lease while A holds it", b, err)
	}
	if ok, _ := s.AdvanceSweep(ctx, "n1", "B", 0, 42, now); ok {
		t.Fatal("B advanced a cursor it does not hold")
	}
	if ok, _ := s.AdvanceSweep(ctx, "n1", "A", 0, 42, now); !ok {
		t.Fatal("A could not advance its own cursor")
	}
	if ok, _ := s.AdvanceSweep(ctx, "n1", "A", 0, 7, now); ok {
		t.Fatal("A advanced from a cursor that was already left")
	}
	// A dies: its lease lapses and B resumes where A stopped.
	if err := s.rdb.Del(ctx, s.keys.ExpiryLease("n1")).Err(); err != nil {
		t.Fatal(err)
	}
	b, err = s.AcquireSweep(ctx, "n1", "B", lease, every, now)
	if err != nil || !b.Held || b.Cursor != 42 {
		t.Fatalf("B after A died: %+v (err %v), want the lease at cursor 42", b, err)
	}
	if ok, _ := s.AdvanceSweep(ctx, "n1", "B", 42, 0, now); !ok {
		t.Fatal("B could not complete the cycle")
	}
	cases := []struct {
		name  string
		at    time.Time
		every time.Duration
		held  bool
	}{
		{"not due within the interval", now.Add(every - time.Second), every, false},
		{"due once the interval passed", now.Add(every), every, true},
		{"always due when forced", now, 0, true},
	}
	for _, tc := range cases {
		st, err := s.AcquireSweep(ctx, "n1", "C", lease, tc.every, tc.at)
		if err != nil || st.Held != tc.held || st.Cycles != 1 || !st.LastDone.Equal(now) {
			t.Fatalf("%s: %+v (err %v), want held=%v after 1 cycle done at %s", tc.name, st, err, tc.held, now)
		}
		s.rdb.Del(ctx, s.keys.ExpiryLease("n1"))
	}
}

func TestParseKeyTakesApartTheStoresKeys(t *testing.T) {
	k := Keys{Prefix: "p[1]:"}
	cases := []struct {
		key  string
		want KeyRef
		ok   bool
	}{
		{k.ConvMeta("c1"), KeyRef{Conv: "c1", Part: "meta"}, true},
		{k.Dedupe("c1", 20000), KeyRef{Conv: "c1", Part: "dd:20000"}, true},
		{k.Cursor("u1", "phone"), KeyRef{User: "u1", Part: "cur:phone"}, true},
		{k.ExpirySweep(), KeyRef{}, false},
		{"other:{c:c1}:meta", KeyRef{}, false},
		{"p[1]:{c:}:meta", KeyRef{}, false},
	}
	for _, tc := range cases {
		got, ok := k.ParseKey(tc.key)
		if ok != tc.ok || got != tc.want {
			t.Fatalf("ParseKey(%q) = %+v, %v; want %+v, %v", tc.key, got, ok, tc.want, tc.ok)
		}
	}
	for _, key := range []string{k.Dedupe("c1", 20000), k.DedupeBucket("c1", 20000, 7), k.DedupeExact("c1", 20000)} {
		ref, _ := k.ParseKey(key)
		if day, ok := ref.DedupeDay(); !ok || day != 20000 {
			t.Fatalf("DedupeDay of %s = %d, %v; want 20000", key, day, ok)
		}
	}
}

func TestScanKeysFindsEveryKeyOfThePrefixAndNoOther(t *testing.T) {
	s := expStore(t)
	ctx := context.Background()
	// A prefix with glob characters must match literally.
	odd, err := New(s.rdb, Config{Prefix: s.keys.Prefix + "[x]*"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{s.keys.ConvMeta("c1"), s.keys.Mentions("u1"), s.keys.Dedupe("c1", 3)}
	for _, k := range want {
		s.rdb.Set(ctx, k, 1, 0)
	}
	s.rdb.Set(ctx, s.keys.ExpirySweep(), 1, 0)
	s.rdb.Set(ctx, odd.keys.ConvMeta("c2"), 1, 0)
	s.rdb.Set(ctx, s.keys.Prefix+"[x]z{c:c3}:meta", 1, 0)
	for _, st := range []*Store{s, odd} {
		nodes, err := st.ScanNodes(ctx)
		if err != nil || len(nodes) != 1 {
			t.Fatalf("nodes %v (err %v)", nodes, err)
		}
		var got []string
		for cursor := uint64(0); ; {
			keys, next, err := st.ScanKeys(ctx, nodes[0], cursor, 10)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, keys...)
			if cursor = next; cursor == 0 {
				break
			}
		}
		sort.Strings(got)
		exp := []string{odd.keys.ConvMeta("c2")}
		if st == s {
			exp = slices.Clone(want)
		}
		sort.Strings(exp)
		if !slices.Equal(slices.Compact(got), exp) {
			t.Fatalf("prefix %q: scan found %v, want %v", st.keys.Prefix, got, exp)
		}
	}
}
