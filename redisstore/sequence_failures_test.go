package redisstore

import (
	"context"
	"strings"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
)

// keysSnapshot is every key of a test's prefix with its serialized value.
func keysSnapshot(t *testing.T, s *Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	names, err := s.rdb.Keys(ctx, s.cfg.Prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(names))
	for _, k := range names {
		v, err := s.rdb.Dump(ctx, k).Result()
		if err != nil {
			t.Fatalf("dump %s: %v", k, err)
		}
		out[k] = v
	}
	return out
}

// A conversation key of the wrong type fails the sequencing call for good
// (Permanent), naming the conversation, and the call leaves every key as it
// was: no dedupe entry, timeline element or meta field of a record that got
// no seq. Once the key is repaired, the same records (the dead letters
// produced again) get the next seqs, one message per seq, none lost, and a
// further replay finds them.
func TestSequencingAKeyOfTheWrongTypeFailsForGoodAndChangesNothing(t *testing.T) {
	day := DayOf(seqTestNow)
	cases := []struct {
		name string
		key  func(k Keys) string
	}{
		{"meta", func(k Keys) string { return k.ConvMeta("g") }},
		{"timeline", func(k Keys) string { return k.Timeline("g") }},
		{"members", func(k Keys) string { return k.Members("g") }},
		{"mention_all", func(k Keys) string { return k.MentionAll("g") }},
		{"roles", func(k Keys) string { return k.Roles("g") }},
		{"past members", func(k Keys) string { return k.PastMembers("g") }},
		{"today's dedupe", func(k Keys) string { return k.Dedupe("g", day) }},
		{"an older dedupe day", func(k Keys) string { return k.Dedupe("g", day-2) }},
		{"notices", func(k Keys) string { return k.Notices("g") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := seqTestStore(t, 1000)
			ctx := context.Background()
			founding := []*schemas.Message{memberMsg("g", "found", "a", schemas.Kind_KIND_MEMBER_JOIN, "a", "b", "c"),
				groupMsg("g", "m1", "a")}
			if _, err := s.Sequence(ctx, "g", founding, nil, seqTestNow); err != nil {
				t.Fatal(err)
			}
			// the past members' hash exists only after a leave
			if _, err := s.Sequence(ctx, "g", []*schemas.Message{
				memberMsg("g", "bye", "c", schemas.Kind_KIND_MEMBER_LEAVE, "c")}, nil, seqTestNow); err != nil {
				t.Fatal(err)
			}
			key := tc.key(s.keys)
			saved, _ := s.rdb.Dump(ctx, key).Result() // "" when the key does not exist
			ttl := s.rdb.PTTL(ctx, key).Val()
			if err := s.rdb.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			if err := s.rdb.Set(ctx, key, "someone's string", 0).Err(); err != nil {
				t.Fatal(err)
			}
			before := keysSnapshot(t, s)

			batch := []*schemas.Message{groupMsg("g", "m2", "a"),
				memberMsg("g", "join-d", "a", schemas.Kind_KIND_MEMBER_JOIN, "d"), groupMsg("g", "m3", "b")}
			batch[2].MentionAll = true
			_, err := s.Sequence(ctx, "g", batch, []string{"d"}, seqTestNow)
			if err == nil {
				t.Fatalf("sequencing with %s a string succeeded", key)
			}
			if !Permanent(err) {
				t.Fatalf("Permanent(%v) = false: the call would be retried for ever", err)
			}
			for _, want := range []string{"sequence g", "WRONGTYPE"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("error %q does not say %q", err, want)
				}
			}
			after := keysSnapshot(t, s)
			if len(after) != len(before) {
				t.Fatalf("the failed call left %d keys, there were %d", len(after), len(before))
			}
			for k, v := range before {
				if after[k] != v {
					t.Fatalf("the failed call changed %s", k)
				}
			}

			// repaired: the key as it was
			if err := s.rdb.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			if saved != "" {
				if ttl < 0 {
					ttl = 0
				}
				if err := s.rdb.RestoreReplace(ctx, key, ttl, saved).Err(); err != nil {
					t.Fatal(err)
				}
			}
			for try, want := range []SeqStatus{SeqNew, SeqDuplicate} {
				res, err := s.Sequence(ctx, "g", batch, []string{"d"}, seqTestNow+int64(try))
				if err != nil {
					t.Fatalf("the repaired conversation: %v", err)
				}
				for i, it := range res.Items {
					if it.Status != want || it.Seq != uint64(4+i) {
						t.Fatalf("try %d: %s: status %d seq %d, want status %d seq %d", try, batch[i].GetClientMsgId(),
							it.Status, it.Seq, want, 4+i)
					}
				}
			}
			ids := map[string]int{}
			for _, sq := range timeline(t, s, "g") {
				ids[sq.GetMessage().GetClientMsgId()]++
			}
			for _, id := range []string{"found", "m1", "bye", "m2", "join-d", "m3"} {
				if ids[id] != 1 {
					t.Fatalf("the timeline holds %s %d times: %v", id, ids[id], ids)
				}
			}
			if len(ids) != 6 {
				t.Fatalf("the timeline holds %v, want 6 messages", ids)
			}
			if seq, _ := s.rdb.HGet(ctx, s.keys.ConvMeta("g"), "seq").Int(); seq != 6 {
				t.Fatalf("meta seq %d, want 6", seq)
			}
		})
	}
}

// A direct conversation's batch of messages takes the fast path, where
// the timeline has no TYPE check: its RPUSH is the call's first write and
// fails whole. The dedupe day's exact map, probed with the hold and the
// empty days in one EXISTS, is still type-checked when it exists. Either
// key of the wrong type fails the call with nothing changed, and once
// repaired the batch gets the next seqs, then is found again.
func TestSequencingADirectBatchOverAKeyOfTheWrongTypeChangesNothing(t *testing.T) {
	day := DayOf(seqTestNow)
	for _, tc := range []struct {
		name string
		key  func(k Keys) string
	}{
		{"timeline", func(k Keys) string { return k.Timeline("d") }},
		{"today's exact map", func(k Keys) string { return k.DedupeExact("d", day) }},
		{"today's dedupe", func(k Keys) string { return k.Dedupe("d", day) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := seqTestStore(t, 1000)
			ctx := context.Background()
			if _, err := s.Sequence(ctx, "d", []*schemas.Message{directMsg("d", "m1", "a", "b")}, nil, seqTestNow); err != nil {
				t.Fatal(err)
			}
			key := tc.key(s.keys)
			saved, _ := s.rdb.Dump(ctx, key).Result()
			ttl := s.rdb.PTTL(ctx, key).Val()
			if err := s.rdb.Set(ctx, key, "someone's string", 0).Err(); err != nil {
				t.Fatal(err)
			}
			before := keysSnapshot(t, s)
			batch := []*schemas.Message{directMsg("d", "m2", "a", "b"), directMsg("d", "m3", "b", "a")}
			_, err := s.Sequence(ctx, "d", batch, nil, seqTestNow)
			if err == nil || !Permanent(err) || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Fatalf("sequencing with %s a string: %v, want a permanent WRONGTYPE", key, err)
			}
			after := keysSnapshot(t, s)
			if len(after) != len(before) {
				t.Fatalf("the failed call left %d keys, there were %d", len(after), len(before))
			}
			for k, v := range before {
				if after[k] != v {
					t.Fatalf("the failed call changed %s", k)
				}
			}
			if err := s.rdb.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			if saved != "" {
				if err := s.rdb.RestoreReplace(ctx, key, max(ttl, 0), saved).Err(); err != nil {
					t.Fatal(err)
				}
			}
			for try, want := range []SeqStatus{SeqNew, SeqDuplicate} {
				res, err := s.Sequence(ctx, "d", batch, nil, seqTestNow)
				if err != nil {
					t.Fatalf("the repaired conversation: %v", err)
				}
				for i, it := range res.Items {
					if it.Status != want || it.Seq != uint64(2+i) {
						t.Fatalf("try %d: %s: status %d seq %d, want status %d seq %d", try,
							batch[i].GetClientMsgId(), it.Status, it.Seq, want, 2+i)
					}
				}
			}
			if got := len(timeline(t, s, "d")); got != 3 {
				t.Fatalf("the timeline holds %d messages, want 3", got)
			}
		})
	}
}

// A direct conversation's first messages write its member hash on the
// fast path, after the timeline: a member hash of the wrong type is
// checked first, and the call changes nothing.
func TestFoundingADirectConversationOverAMemberHashOfTheWrongTypeChangesNothing(t *testing.T) {
	s := seqTestStore(t, 1000)
	ctx := context.Background()
	if err := s.rdb.Set(ctx, s.keys.Members("d"), "someone's string", 0).Err(); err != nil {
		t.Fatal(err)
	}
	before := keysSnapshot(t, s)
	batch := []*schemas.Message{directMsg("d", "m1", "a", "b"), directMsg("d", "m2", "b", "a")}
	if _, err := s.Sequence(ctx, "d", batch, nil, seqTestNow); err == nil || !Permanent(err) {
		t.Fatalf("founding over a string member hash: %v, want a permanent error", err)
	}
	after := keysSnapshot(t, s)
	if len(after) != len(before) {
		t.Fatalf("the failed call left %d keys, there were %d", len(after), len(before))
	}
	if err := s.rdb.Del(ctx, s.keys.Members("d")).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := s.Sequence(ctx, "d", batch, []string{"a", "b"}, seqTestNow)
	if err != nil {
		t.Fatal(err)
	}
	if res.Items[0].Seq != 1 || res.Items[1].Seq != 2 || res.MemberSeqs["a"] != 0 || len(res.Members) != 2 {
		t.Fatalf("the repaired founding: %+v", res)
	}
}
