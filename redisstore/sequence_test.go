package redisstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
)

// seqTestNow is a write time of today: dedupe buckets expire by Redis's
// own clock.
var seqTestNow = time.Now().UnixMilli()

func seqTestStore(t *testing.T, threshold int) *Store {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	s, err := New(rdb, Config{Prefix: prefix, LargeGroupThreshold: threshold})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func groupMsg(conv, id, sender string) *schemas.Message {
	return &schemas.Message{ClientMsgId: id, ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: sender, Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain", Body: []byte("hello " + id)}
}

func directMsg(conv, id, sender, peer string) *schemas.Message {
	m := groupMsg(conv, id, sender)
	m.ConvType, m.Recipients = schemas.ConvType_CONV_TYPE_DIRECT, []string{peer}
	return m
}

func memberMsg(conv, id, sender string, kind schemas.Kind, users ...string) *schemas.Message {
	m := groupMsg(conv, id, sender)
	m.Kind, m.Recipients, m.Body = kind, users, nil
	return m
}

// timeline reads the conversation's whole timeline and checks it is
// contiguous from meta's first.
func timeline(t *testing.T, s *Store, conv string) []*schemas.Sequenced {
	t.Helper()
	ctx := context.Background()
	first, err := s.rdb.HGet(ctx, s.keys.ConvMeta(conv), "first").Uint64()
	if err != nil {
		t.Fatalf("meta first: %v", err)
	}
	raw, err := s.rdb.LRange(ctx, s.keys.Timeline(conv), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*schemas.Sequenced, len(raw))
	for i, r := range raw {
		sq, err := DecodeEntry([]byte(r), conv, 0)
		if err != nil {
			t.Fatal(err)
		}
		if sq.Seq != first+uint64(i) {
			t.Fatalf("timeline element %d holds seq %d, want %d", i, sq.Seq, first+uint64(i))
		}
		out[i] = sq
	}
	return out
}

func seqs(items []SequencedItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		switch it.Status {
		case SeqNew:
			out[i] = fmt.Sprintf("new %d", it.Sequenced.Seq)
		case SeqDuplicate:
			out[i] = fmt.Sprintf("dup %d", it.Sequenced.GetSeq())
		default:
			out[i] = "rejected " + it.Reason.Error()
		}
	}
	return out
}

func TestSequenceAssignsContiguousSeqsAndDedupes(t *testing.T) {
	cases := []struct {
		name    string
		batches [][]*schemas.Message
		want    [][]string
		entries int
	}{
		{
			name:    "one batch is numbered from 1",
			batches: [][]*schemas.Message{{groupMsg("g", "a", "u1"), groupMsg("g", "b", "u1"), groupMsg("g", "c", "u1")}},
			want:    [][]string{{"new 1", "new 2", "new 3"}},
			entries: 3,
		},
		{
			name:    "a replayed batch gets its original seqs and appends nothing",
			batches: [][]*schemas.Message{{groupMsg("g", "a", "u1"), groupMsg("g", "b", "u1")}, {groupMsg("g", "a", "u1"), groupMsg("g", "b", "u1")}},
			want:    [][]string{{"new 1", "new 2"}, {"dup 1", "dup 2"}},
			entries: 2,
		},
		{
			name:    "a resend inside one batch is a duplicate of the first",
			batches: [][]*schemas.Message{{groupMsg("g", "a", "u1"), groupMsg("g", "b", "u1"), groupMsg("g", "a", "u1")}},
			want:    [][]string{{"new 1", "new 2", "dup 1"}},
			entries: 2,
		},
		{
			name:    "next batch continues the sequence",
			batches: [][]*schemas.Message{{groupMsg("g", "a", "u1")}, {groupMsg("g", "b", "u1"), groupMsg("g", "a", "u1"), groupMsg("g", "c", "u1")}},
			want:    [][]string{{"new 1"}, {"new 2", "dup 1", "new 3"}},
			entries: 3,
		},
		{
			name: "a third user in a direct conversation is rejected and takes no seq",
			batches: [][]*schemas.Message{{directMsg("d", "a", "u1", "u2"), directMsg("d", "b", "u3", "u1"),
				directMsg("d", "c", "u2", "u1")}},
			want:    [][]string{{"new 1", "rejected sender: direct conversation already has two other participants", "new 2"}},
			entries: 2,
		},
		{
			name:    "a group record in a direct conversation is rejected",
			batches: [][]*schemas.Message{{directMsg("d", "a", "u1", "u2"), groupMsg("d", "b", "u1")}},
			want:    [][]string{{"new 1", "rejected conv_type: is g but the conversation is d"}},
			entries: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := seqTestStore(t, 0)
			ctx := context.Background()
			conv := tc.batches[0][0].GetConvId()
			for i, b := range tc.batches {
				res, err := s.Sequence(ctx, conv, b, nil, seqTestNow+int64(i))
				if err != nil {
					t.Fatal(err)
				}
				if got := seqs(res.Items); fmt.Sprint(got) != fmt.Sprint(tc.want[i]) {
					t.Fatalf("batch %d: got %q, want %q", i, got, tc.want[i])
				}
				for j, it := range res.Items {
					if it.Status == SeqRejected && !errors.Is(it.Reason, schemas.ErrInvalid) {
						t.Fatalf("record %d: reason %v is not an InvalidError", j, it.Reason)
					}
					if it.Status == SeqDuplicate && it.Sequenced.GetWriteTimeMs() == seqTestNow+int64(i) && i > 0 {
						t.Fatalf("record %d: duplicate carries the resend's write time", j)
					}
				}
			}
			tl := timeline(t, s, conv)
			if len(tl) != tc.entries {
				t.Fatalf("timeline has %d entries, want %d", len(tl), tc.entries)
			}
		})
	}
}

func TestSequenceDuplicateReturnsTheOriginalEntry(t *testing.T) {
	s := seqTestStore(t, 0)
	ctx := context.Background()
	orig := groupMsg("g", "a", "u1")
	if _, err := s.Sequence(ctx, "g", []*schemas.Message{orig}, nil, seqTestNow); err != nil {
		t.Fatal(err)
	}
	resend := proto.Clone(orig).(*schemas.Message)
	resend.Body = []byte("edited on resend")
	res, err := s.Sequence(ctx, "g", []*schemas.Message{resend}, nil, seqTestNow+5000)
	if err != nil {
		t.Fatal(err)
	}
	got := res.Items[0].Sequenced
	if res.Items[0].Status != SeqDuplicate || got.GetSeq() != 1 || got.GetWriteTimeMs() != seqTestNow ||
		!proto.Equal(got.GetMessage(), orig) || got.GetEpoch() != uint64(seqTestNow) {
		t.Fatalf("resend answered %v, want the original entry of seq 1", got)
	}
}

func TestSequenceMembershipFollowsTheStream(t *testing.T) {
	s := seqTestStore(t, 4)
	ctx := context.Background()
	join, leave := schemas.Kind_KIND_MEMBER_JOIN, schemas.Kind_KIND_MEMBER_LEAVE
	batch := []*schemas.Message{
		memberMsg("g", "j1", "admin", join, "admin", "u1", "u2"),
		groupMsg("g", "m1", "u1"),
		memberMsg("g", "j2", "admin", join, "u3"),
		memberMsg("g", "l1", "admin", leave, "u2"),
	}
	res, err := s.Sequence(ctx, "g", batch, []string{"u1", "u2", "u3", "nobody"}, seqTestNow)
	if err != nil {
		t.Fatal(err)
	}
	wantMembers := map[string]uint64{"admin": 0, "u1": 0, "u3": 3}
	if fmt.Sprint(res.Members) != fmt.Sprint(wantMembers) || res.MemberCount != 3 || res.LargeFrom != 0 {
		t.Fatalf("members %v (count %d, large from %d), want %v", res.Members, res.MemberCount, res.LargeFrom, wantMembers)
	}
	wantProbe := map[string]uint64{"u1": 0, "u3": 3}
	if fmt.Sprint(res.MemberSeqs) != fmt.Sprint(wantProbe) {
		t.Fatalf("probes %v, want %v", res.MemberSeqs, wantProbe)
	}
	// A fifth member crosses the threshold of 4: the group is large from
	// that join on, and stays large when members leave.
	res, err = s.Sequence(ctx, "g", []*schemas.Message{
		memberMsg("g", "j3", "admin", join, "u4", "u5"),
		memberMsg("g", "l2", "admin", leave, "u4", "u3"),
	}, []string{"u4"}, seqTestNow)
	if err != nil {
		t.Fatal(err)
	}
	if res.LargeFrom != 5 || res.Members != nil || res.MemberCount != 3 || res.LargeConverted {
		t.Fatalf("large from %d, members %v, count %d, converted %v; want large from 5", res.LargeFrom, res.Members, res.MemberCount, res.LargeConverted)
	}
	large, _ := s.rdb.HGet(ctx, s.keys.ConvMeta("g"), "large").Result()
	if large != "1" {
		t.Fatalf("meta large = %q, want 1", large)
	}
}

func TestSequenceAllMentionOfLargeGroupIsOneReference(t *testing.T) {
	s := seqTestStore(t, 2)
	ctx := context.Background()
	all := groupMsg("g", "m1", "u1")
	all.MentionAll = true
	_, err := s.Sequence(ctx, "g", []*schemas.Message{
		memberMsg("g", "j1", "u1", schemas.Kind_KIND_MEMBER_JOIN, "u1", "u2", "u3"), all}, nil, seqTestNow)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.rdb.ZRangeWithScores(ctx, s.keys.MentionAll("g"), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Member != "2" || int64(got[0].Score) != seqTestNow {
		t.Fatalf("@all references %v, want seq 2 at the write time", got)
	}
}

func TestSequenceDedupeBucketExpiresAfterTheWindow(t *testing.T) {
	s := seqTestStore(t, 0)
	ctx := context.Background()
	if _, err := s.Sequence(ctx, "g", []*schemas.Message{groupMsg("g", "a", "u1")}, nil, seqTestNow); err != nil {
		t.Fatal(err)
	}
	at, err := s.rdb.ExpireTime(ctx, s.keys.Dedupe("g", DayOf(seqTestNow))).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := time.Duration(DayOf(seqTestNow)+1+7) * 24 * time.Hour
	if at != want {
		t.Fatalf("dedupe bucket expires at %v, want %v", at, want)
	}
}

// A day's bucket 0 that existed gets no EXPIREAT again (it has the day's
// instant already), while the buckets its splits create get theirs.
func TestSequenceDedupeDayKeysAllExpireAtTheDaysInstantAcrossCalls(t *testing.T) {
	s := seqTestStore(t, 0)
	ctx := context.Background()
	day := DayOf(seqTestNow)
	for c := range 10 {
		var batch []*schemas.Message
		for i := range 8 {
			batch = append(batch, groupMsg("g", fmt.Sprintf("c%d-%d", c, i), "u1"))
		}
		if _, err := s.Sequence(ctx, "g", batch, nil, seqTestNow); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := s.dedupeDayKeys(ctx, "g", day)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < 2 {
		t.Fatalf("80 ids left the day %v, want a split", keys)
	}
	want := time.Duration(day+1+7) * 24 * time.Hour
	for _, k := range keys {
		if at := s.rdb.ExpireTime(ctx, k).Val(); at != want {
			t.Fatalf("%s expires at %v, want %v", k, at, want)
		}
	}
}

// The dedupe window (7 days) outlives the shortest timeline window (3
// days): a resend can name a seq that expiry already removed, below the
// floor. Its LINDEX index would be negative and count from the tail.
func TestSequenceDuplicateOfAnExpiredEntryCarriesNoEntry(t *testing.T) {
	s := seqTestStore(t, 0)
	ctx := context.Background()
	var batch []*schemas.Message
	for i := range 4 {
		batch = append(batch, groupMsg("g", fmt.Sprint(i), "u1"))
	}
	old := seqTestNow - (4 * 24 * time.Hour).Milliseconds()
	if _, err := s.Sequence(ctx, "g", batch[:2], nil, old); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sequence(ctx, "g", batch[2:], nil, seqTestNow); err != nil {
		t.Fatal(err)
	}
	got, err := s.ExpireConversation(ctx, "g", time.UnixMilli(seqTestNow), Retention{Window: MinRetention}, 10)
	if err != nil || got.Timeline != 2 {
		t.Fatalf("expiry removed %d entries (err %v), want seqs 1 and 2", got.Timeline, err)
	}
	res, err := s.Sequence(ctx, "g", []*schemas.Message{batch[0], batch[3]}, nil, seqTestNow)
	if err != nil {
		t.Fatal(err)
	}
	if it := res.Items[0]; it.Status != SeqDuplicate || it.Seq != 1 || it.Sequenced != nil {
		t.Fatalf("resend of expired seq 1: %+v, want a duplicate of seq 1 without entry", it)
	}
	if it := res.Items[1]; it.Status != SeqDuplicate || it.Seq != 4 || it.Sequenced.GetSeq() != 4 ||
		it.Sequenced.GetMessage().GetClientMsgId() != "3" {
		t.Fatalf("resend of seq 4: %+v, want its own entry", it)
	}
	if n, _ := s.rdb.LLen(ctx, s.keys.Timeline("g")).Result(); n != 2 {
		t.Fatalf("timeline holds %d entries after the resends, want 2", n)
	}
}

// A day the caller read as empty is only checked to be still empty by
// the script; one that holds ids by then (a restore put yesterday's back
// after the read) is read like any other, so a resend is found.
func TestAResendIsFoundInADayFilledAfterTheCallersRead(t *testing.T) {
	ctx := context.Background()
	s := seqTestStore(t, 100)
	yesterday := seqTestNow - 86_400_000
	m := directMsg("d", "m1", "ann", "bob")
	if _, err := s.Sequence(ctx, "d", []*schemas.Message{m}, nil, yesterday); err != nil {
		t.Fatal(err)
	}
	day := s.keys.Dedupe("d", DayOf(yesterday))
	if err := s.rdb.Rename(ctx, day, day+"-aside").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := s.rdb.(*redis.Client)
	rdb.AddHook(&onFirstScript{key: s.keys.Dedupe("d", DayOf(seqTestNow)), do: func() {
		rdb.Rename(ctx, day+"-aside", day)
	}})
	res, err := s.Sequence(ctx, "d", []*schemas.Message{m}, nil, seqTestNow)
	if err != nil {
		t.Fatal(err)
	}
	if it := res.Items[0]; it.Status != SeqDuplicate || it.Seq != 1 {
		t.Fatalf("sequenced as %v seq %d, want the duplicate of seq 1", it.Status, it.Seq)
	}
	if n := len(timeline(t, s, "d")); n != 1 {
		t.Fatalf("timeline holds %d entries, want 1", n)
	}
}
