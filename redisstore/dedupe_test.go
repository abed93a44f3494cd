package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
)

// collidingDigest gives the ids named the same digest; others keep theirs.
func collidingDigest(ids ...string) func(string) string {
	return func(cmid string) string {
		if slices.Contains(ids, cmid) {
			return dedupeDigest(ids[0])
		}
		return dedupeDigest(cmid)
	}
}

func TestSequenceGivesIdsSharingADigestTheirOwnSeqs(t *testing.T) {
	day := int64(24 * time.Hour / time.Millisecond)
	cases := []struct {
		name    string
		batches [][]string // client_msg_ids; batch i is written i days ago when spread
		spread  bool
		want    [][]string
	}{
		{
			name:    "in one batch",
			batches: [][]string{{"a", "b", "a", "b"}, {"b", "a"}},
			want:    [][]string{{"new 1", "new 2", "dup 1", "dup 2"}, {"dup 2", "dup 1"}},
		},
		{
			name:    "in later batches, with a third id",
			batches: [][]string{{"a"}, {"b"}, {"c", "b", "a"}, {"a", "b", "c"}},
			want:    [][]string{{"new 1"}, {"new 2"}, {"new 3", "dup 2", "dup 1"}, {"dup 1", "dup 2", "dup 3"}},
		},
		{
			name:    "on different days",
			batches: [][]string{{"a"}, {"b"}, {"a", "b"}},
			spread:  true,
			want:    [][]string{{"new 1"}, {"new 2"}, {"dup 1", "dup 2"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := seqTestStore(t, 0)
			s.digest = collidingDigest("a", "b", "c")
			ctx := context.Background()
			for i, ids := range tc.batches {
				var msgs []*schemas.Message
				for _, id := range ids {
					msgs = append(msgs, groupMsg("g", id, "u1"))
				}
				at := seqTestNow
				if tc.spread {
					at -= int64(len(tc.batches)-1-i) * day
				}
				res, err := s.Sequence(ctx, "g", msgs, nil, at)
				if err != nil {
					t.Fatal(err)
				}
				if got := seqs(res.Items); !slices.Equal(got, tc.want[i]) {
					t.Fatalf("batch %d %v: got %q, want %q", i, ids, got, tc.want[i])
				}
			}
			var ids []string
			for _, e := range timeline(t, s, "g") {
				ids = append(ids, e.GetMessage().GetClientMsgId())
			}
			if want := slices.Compact(slices.Sorted(slices.Values(slices.Concat(tc.batches...)))); !slices.Equal(slices.Sorted(slices.Values(ids)), want) {
				t.Fatalf("timeline holds %q, want each of %q once", ids, want)
			}
		})
	}
}

// dedupeKeysOf lists the dedupe keys of a conversation's day.
func dedupeKeysOf(t *testing.T, s *Store, conv string, day int64) []string {
	t.Helper()
	keys, err := s.rdb.Keys(context.Background(), s.keys.Dedupe(conv, day)+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

func TestSequenceDedupeBucketsSplitAsTheDayFillsAndStayListpacks(t *testing.T) {
	s := seqTestStore(t, 0)
	ctx := context.Background()
	const n, batch = 400, 20
	for resend := range 2 {
		for start := 0; start < n; start += batch {
			var msgs []*schemas.Message
			for i := start; i < start+batch; i++ {
				msgs = append(msgs, groupMsg("g", fmt.Sprint("id-", i), "u1"))
			}
			res, err := s.Sequence(ctx, "g", msgs, nil, seqTestNow)
			if err != nil {
				t.Fatal(err)
			}
			for i, it := range res.Items {
				want := SeqStatus(resend) // SeqNew, then SeqDuplicate
				if it.Status != want || it.Seq != uint64(start+i+1) {
					t.Fatalf("pass %d, id-%d: status %d seq %d; want status %d seq %d", resend, start+i, it.Status, it.Seq, want, start+i+1)
				}
			}
		}
	}
	day := DayOf(seqTestNow)
	buckets, _ := s.rdb.HGet(ctx, s.keys.Dedupe("g", day), "n").Int()
	keys := dedupeKeysOf(t, s, "g", day)
	if buckets < 2 || len(keys) != buckets {
		t.Fatalf("%d buckets recorded, keys %v; want several, each a key", buckets, keys)
	}
	held := 0
	for _, k := range keys {
		enc, _ := s.rdb.ObjectEncoding(ctx, k).Result()
		if enc != "listpack" {
			t.Fatalf("%s is encoded %s, want listpack", k, enc)
		}
		fields, _ := s.rdb.HKeys(ctx, k).Result()
		for _, f := range fields {
			if len(f) == DedupeDigestBytes {
				held++
			}
		}
	}
	if held != n {
		t.Fatalf("buckets hold %d digests, want %d", held, n)
	}
}

// The restore a rebuild runs for each page of the history puts back ids
// whose digests collide, each with its own seq.
func TestRestoreDedupeRestoresIdsSharingADigest(t *testing.T) {
	s := seqTestStore(t, 0)
	s.digest = collidingDigest("a", "b")
	ctx := context.Background()
	var ids []DedupeRestore
	msgs := []*schemas.Message{groupMsg("g", "a", "u1"), groupMsg("g", "b", "u1"), groupMsg("g", "c", "u1")}
	res, err := s.Sequence(ctx, "g", msgs, nil, seqTestNow)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		e := it.Sequenced
		ids = append(ids, DedupeRestore{Day: DayOf(e.GetWriteTimeMs()), Cmid: e.GetMessage().GetClientMsgId(), Seq: e.GetSeq()})
	}
	if keys := dedupeKeysOf(t, s, "g", DayOf(seqTestNow)); len(keys) == 0 || s.rdb.Del(ctx, keys...).Err() != nil {
		t.Fatalf("could not drop the dedupe keys %v", keys)
	}
	n, err := s.RestoreDedupe(ctx, "g", ids)
	if err != nil || n != 3 {
		t.Fatalf("restored %d dedupe ids (err %v), want 3", n, err)
	}
	res, err = s.Sequence(ctx, "g", []*schemas.Message{msgs[1], msgs[0], msgs[2], groupMsg("g", "d", "u1")}, nil, seqTestNow)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := seqs(res.Items), []string{"dup 2", "dup 1", "dup 3", "new 4"}; !slices.Equal(got, want) {
		t.Fatalf("resends after the restore: %q, want %q", got, want)
	}
}

func TestExpireDedupeDropsEveryKeyOfTheDay(t *testing.T) {
	s := seqTestStore(t, 0)
	s.digest = collidingDigest("id-0", "id-1")
	ctx := context.Background()
	var msgs []*schemas.Message
	for i := range 100 {
		msgs = append(msgs, groupMsg("g", fmt.Sprint("id-", i), "u1"))
	}
	for start := 0; start < len(msgs); start += 20 {
		if _, err := s.Sequence(ctx, "g", msgs[start:start+20], nil, seqTestNow); err != nil {
			t.Fatal(err)
		}
	}
	day := DayOf(seqTestNow)
	keys := dedupeKeysOf(t, s, "g", day)
	if len(keys) < 3 || !slices.ContainsFunc(keys, func(k string) bool { return strings.HasSuffix(k, ":x") }) {
		t.Fatalf("seeded dedupe keys %v, want several buckets and an exact map", keys)
	}
	end := time.Unix(s.dedupeExpireAt(day), 0)
	if gone, err := s.ExpireDedupe(ctx, "g", day, end); err != nil || !gone {
		t.Fatalf("expire at the end of the window: gone %v, err %v", gone, err)
	}
	if left := dedupeKeysOf(t, s, "g", day); len(left) != 0 {
		t.Fatalf("keys left after expiry: %v", left)
	}
}

// The scripts name a day's other buckets after its bucket 0: on a Redis
// Cluster they must land in the conversation's slot.
func TestDedupeBucketsAndExactMapWorkOnRedisCluster(t *testing.T) {
	rdb, prefix := testenv.RedisCluster(t)
	s, err := New(rdb, Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	s.digest = collidingDigest("id-0", "id-1")
	ctx := context.Background()
	var msgs []*schemas.Message
	for i := range 100 {
		msgs = append(msgs, groupMsg("g", fmt.Sprint("id-", i), "u1"))
	}
	for pass := range 2 {
		for start := 0; start < len(msgs); start += 20 {
			res, err := s.Sequence(ctx, "g", msgs[start:start+20], nil, seqTestNow)
			if err != nil {
				t.Fatal(err)
			}
			for i, it := range res.Items {
				if it.Status != SeqStatus(pass) || it.Seq != uint64(start+i+1) {
					t.Fatalf("pass %d, id-%d: status %d seq %d", pass, start+i, it.Status, it.Seq)
				}
			}
		}
	}
	day := DayOf(seqTestNow)
	if n, _ := rdb.HGet(ctx, s.keys.Dedupe("g", day), "n").Int(); n < 2 {
		t.Fatalf("%d buckets, want the day split", n)
	}
	if gone, err := s.ExpireDedupe(ctx, "g", day, time.Unix(s.dedupeExpireAt(day), 0)); err != nil || !gone {
		t.Fatalf("expire: gone %v, err %v", gone, err)
	}
	if n, _ := rdb.Exists(ctx, s.keys.DedupeBucket("g", day, 1), s.keys.DedupeExact("g", day)).Result(); n != 0 {
		t.Fatalf("%d dedupe keys left after expiry", n)
	}
}

// Packed ids (entryBody) are told apart by their whole bytes: UUIDs
// differing in their last digit, and an id of each form, all under one
// digest, each get their own seq and a resend finds its own.
func TestSequenceTellsPackedIdsSharingADigestApart(t *testing.T) {
	ids := []string{"0b0f6a3e-8f7c-4c1e-9d55-6f1c2d3e4f50", "0b0f6a3e-8f7c-4c1e-9d55-6f1c2d3e4f51",
		"0b0f6a3e8f7c4c1e9d556f1c2d3e4f50", "0B0F6A3E-8F7C-4C1E-9D55-6F1C2D3E4F50", "0b0f6a3e"}
	s := seqTestStore(t, 0)
	s.digest = collidingDigest(ids...)
	ctx := context.Background()
	var want []string
	for pass, status := range []string{"new", "dup"} {
		var msgs []*schemas.Message
		for _, id := range ids {
			msgs = append(msgs, groupMsg("g", id, "u1"))
		}
		want = want[:0]
		for i := range ids {
			want = append(want, fmt.Sprint(status, " ", i+1))
		}
		res, err := s.Sequence(ctx, "g", msgs, nil, seqTestNow+int64(pass))
		if err != nil {
			t.Fatal(err)
		}
		if got := seqs(res.Items); !slices.Equal(got, want) {
			t.Fatalf("pass %d: got %q, want %q", pass, got, want)
		}
	}
	for i, e := range timeline(t, s, "g") {
		if got := e.GetMessage().GetClientMsgId(); got != ids[i] {
			t.Fatalf("seq %d holds %q, want %q", i+1, got, ids[i])
		}
	}
}

// A resend of a record whose entry was written before ids were packed
// (field 1 as given) is still found as its duplicate.
func TestSequenceFindsTheResendOfAnEntryWrittenBeforeIdsWerePacked(t *testing.T) {
	s := seqTestStore(t, 0)
	ctx := context.Background()
	m := groupMsg("g", "0b0f6a3e-8f7c-4c1e-9d55-6f1c2d3e4f50", "u1")
	if _, err := s.Sequence(ctx, "g", []*schemas.Message{m}, nil, seqTestNow); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.LSet(ctx, s.keys.Timeline("g"), 0, legacyEntry(t, 1, seqTestNow, m)).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := s.Sequence(ctx, "g", []*schemas.Message{m}, nil, seqTestNow+1)
	if err != nil {
		t.Fatal(err)
	}
	if got := seqs(res.Items); !slices.Equal(got, []string{"dup 1"}) || res.Items[0].Sequenced.GetMessage().GetClientMsgId() != m.GetClientMsgId() {
		t.Fatalf("resend answered %q (%v), want the duplicate of seq 1", got, res.Items[0].Sequenced)
	}
}

// countPipelined counts the commands of a name sent in pipelines.
type countPipelined struct {
	name string
	n    int
}

func (h *countPipelined) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *countPipelined) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *countPipelined) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == h.name {
				h.n++
			}
		}
		return next(ctx, cmds)
	}
}

// Sequencing reads the window's eight dedupe days once a day per
// conversation; later calls read today's alone, and still find a resend
// an older day holds.
func TestSequenceReadsTheOlderDedupeDaysOnceADay(t *testing.T) {
	ctx := context.Background()
	s := seqTestStore(t, 100)
	yesterday := seqTestNow - 86_400_000
	first := directMsg("d", "m1", "ann", "bob")
	if _, err := s.Sequence(ctx, "d", []*schemas.Message{first}, nil, yesterday); err != nil {
		t.Fatal(err)
	}
	h := &countPipelined{name: "hmget"}
	s.rdb.(*redis.Client).AddHook(h)
	for i, want := range []int{8, 1} {
		h.n = 0
		res, err := s.Sequence(ctx, "d", []*schemas.Message{directMsg("d", fmt.Sprint("n", i), "ann", "bob"), first}, nil, seqTestNow)
		if err != nil {
			t.Fatal(err)
		}
		if h.n != want {
			t.Errorf("call %d read %d dedupe days, want %d", i, h.n, want)
		}
		if it := res.Items[1]; it.Status != SeqDuplicate || it.Seq != 1 {
			t.Errorf("call %d: the resend of yesterday's message is %v seq %d, want the duplicate of seq 1", i, it.Status, it.Seq)
		}
	}
}
