package redisstore

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func ev(kind InboxEventKind, seq uint64) InboxEvent {
	return InboxEvent{Kind: kind, Seq: seq, WriteMS: 1000 + int64(seq)}
}

// inboxState is what one user's keys say about conversation "c".
type inboxState struct {
	fields map[string]string
	lane   []string
	large  bool
	listed int64 // cl score, 0 when absent
}

// unread is what a reader derives for conv: last delivered less read.
func (st inboxState) unread(conv string) int64 {
	l, _ := strconv.ParseInt(st.fields[conv+":l"], 10, 64)
	r, _ := strconv.ParseInt(st.fields[conv+":r"], 10, 64)
	return max(0, l-r)
}

func readInbox(t *testing.T, s *Store, user string) inboxState {
	t.Helper()
	ctx := context.Background()
	all, err := s.rdb.HGetAll(ctx, s.keys.Inbox(user)).Result()
	if err != nil {
		t.Fatal(err)
	}
	// the list indexes' fields (InboxLargeGroups, InboxIndexed) are the
	// business of TestListIndexesChangeInTheSameScriptsAsWhatTheyIndex
	for f := range all {
		if strings.HasPrefix(f, ":") {
			delete(all, f)
		}
	}
	lane, err := s.rdb.ZRange(ctx, s.keys.Mentions(user), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	// C:t = L is the one record of large-group membership that readers use.
	large := all["c:t"] == string(InboxLarge)
	score, _ := s.rdb.ZScore(ctx, s.keys.ConvList(user), "c").Result()
	return inboxState{fields: all, lane: lane, large: large, listed: int64(score)}
}

func TestApplyInboxMovesLastReadAndJoinAsEachEventSays(t *testing.T) {
	d, m, o, j, x, c := InboxDelivered, InboxMentioned, InboxOwn, InboxJoined, InboxLeftLarge, InboxConvertLarge
	cases := []struct {
		name    string
		form    InboxForm
		batches [][]InboxEvent
		before  func(s *Store) // between the batches and the replay
		want    inboxState
	}{
		{
			name:    "messages from others count as unread and list the conversation",
			form:    InboxGroup,
			batches: [][]InboxEvent{{ev(d, 1), ev(d, 2)}, {ev(d, 3)}},
			want:    inboxState{fields: map[string]string{"c:l": "3", "c:r": "0", "c:j": "0", "c:t": "g"}, listed: 1003},
		},
		{
			name:    "own message marks read up to it",
			form:    InboxDirect,
			batches: [][]InboxEvent{{ev(d, 1), ev(d, 2), ev(o, 3), ev(d, 4)}},
			want:    inboxState{fields: map[string]string{"c:l": "4", "c:r": "3", "c:j": "0", "c:t": "d"}, listed: 1004},
		},
		{
			name:    "a mention goes to the lane",
			form:    InboxGroup,
			batches: [][]InboxEvent{{ev(d, 1), ev(m, 2)}},
			want:    inboxState{fields: map[string]string{"c:l": "2", "c:r": "0", "c:j": "0", "c:t": "g"}, lane: []string{"c:2"}, listed: 1002},
		},
		{
			name:    "a mention already read is not put back by a replay",
			form:    InboxGroup,
			batches: [][]InboxEvent{{ev(d, 1), ev(m, 2)}},
			before: func(s *Store) {
				ctx := context.Background()
				s.rdb.HSet(ctx, s.keys.Inbox("u"), "c:r", 2)
				s.rdb.ZRem(ctx, s.keys.Mentions("u"), "c:2")
			},
			want: inboxState{fields: map[string]string{"c:l": "2", "c:r": "2", "c:j": "0", "c:t": "g"}, listed: 1002},
		},
		{
			name:    "a mention that comes after an update of higher seqs keeps its place in the lane",
			form:    InboxGroup,
			batches: [][]InboxEvent{{ev(d, 4), ev(d, 5)}, {ev(d, 2), ev(m, 3)}},
			want:    inboxState{fields: map[string]string{"c:l": "5", "c:r": "0", "c:j": "0", "c:t": "g"}, lane: []string{"c:3"}, listed: 1005},
		},
		{
			name:    "own message takes the mentions it read out of the lane",
			form:    InboxGroup,
			batches: [][]InboxEvent{{ev(m, 1), ev(m, 2)}, {ev(o, 3), ev(m, 4)}},
			want:    inboxState{fields: map[string]string{"c:l": "4", "c:r": "3", "c:j": "0", "c:t": "g"}, lane: []string{"c:4"}, listed: 1004},
		},
		{
			name:    "a joiner sees nothing up to the join",
			form:    InboxGroup,
			batches: [][]InboxEvent{{ev(j, 5), ev(d, 6), ev(d, 7)}},
			want:    inboxState{fields: map[string]string{"c:l": "7", "c:r": "5", "c:j": "5", "c:t": "g"}, listed: 1007},
		},
		{
			name:    "a large group member gets reads and mentions, no counters",
			form:    InboxLarge,
			batches: [][]InboxEvent{{ev(j, 5), ev(o, 6), ev(m, 7)}},
			want:    inboxState{fields: map[string]string{"c:r": "6", "c:j": "5", "c:t": "L"}, lane: []string{"c:7"}, large: true},
		},
		{
			name:    "leaving a large group freezes its unread once and lists it by the leave",
			form:    InboxLarge,
			batches: [][]InboxEvent{{ev(j, 5), ev(o, 6)}, {ev(x, 9)}},
			before: func(s *Store) {
				s.rdb.HSet(context.Background(), s.keys.Inbox("u"), "c:r", 7)
			},
			want: inboxState{fields: map[string]string{"c:l": "8", "c:r": "7", "c:j": "5", "c:t": "g"}, listed: 1009},
		},
		{
			name:    "a join and a leave in one batch leave the group frozen, not large",
			form:    InboxLarge,
			batches: [][]InboxEvent{{ev(j, 5), ev(o, 6), ev(x, 9)}},
			want:    inboxState{fields: map[string]string{"c:l": "8", "c:r": "6", "c:j": "5", "c:t": "g"}, listed: 1009},
		},
		{
			name:    "conversion switches a member to the large form",
			form:    InboxLarge,
			batches: [][]InboxEvent{{ev(c, 0), ev(m, 4)}},
			want:    inboxState{fields: map[string]string{"c:t": "L"}, lane: []string{"c:4"}, large: true},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := seqTestStore(t, 0)
			ctx := context.Background()
			var updates []InboxUpdate
			for _, b := range tc.batches {
				updates = append(updates, InboxUpdate{User: "u", Conv: "c", Form: tc.form, Events: b})
			}
			for _, u := range updates {
				outs, errs := s.ApplyInboxes(ctx, []InboxUpdate{u})
				if errs[0] != nil || outs[0] != InboxApplied {
					t.Fatalf("apply %v: %v, %v", u.Events, outs[0], errs[0])
				}
			}
			if tc.before != nil {
				tc.before(s)
			}
			// Replaying every batch changes nothing.
			outs, errs := s.ApplyInboxes(ctx, updates)
			for i := range updates {
				if errs[i] != nil || outs[i] != InboxReplayed {
					t.Fatalf("replay %d: %v, %v", i, outs[i], errs[i])
				}
			}
			got := readInbox(t, s, "u")
			if !maps.Equal(got.fields, tc.want.fields) || !slices.Equal(got.lane, tc.want.lane) ||
				got.large != tc.want.large || got.listed != tc.want.listed {
				t.Fatalf("inbox %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestApplyInboxSkipsReceiveOnlyAndMovedUsers(t *testing.T) {
	s := seqTestStore(t, 0)
	ctx := context.Background()
	if err := s.SetReceiveOnly(ctx, "bot", true); err != nil {
		t.Fatal(err)
	}
	s.rdb.HSet(ctx, s.keys.Profile("star"), "loc", "hot")
	upd := func(user string) InboxUpdate {
		return InboxUpdate{User: user, Conv: "c", Form: InboxGroup, Events: []InboxEvent{ev(InboxMentioned, 1)}}
	}
	outs, errs := s.ApplyInboxes(ctx, []InboxUpdate{upd("bot"), upd("star"), upd("plain")})
	if outs[0] != InboxReceiveOnly || errs[0] != nil {
		t.Fatalf("receive-only account: %v, %v", outs[0], errs[0])
	}
	if !errors.Is(errs[1], ErrUserMoved) {
		t.Fatalf("moved user: %v, want ErrUserMoved", errs[1])
	}
	if outs[2] != InboxApplied || errs[2] != nil {
		t.Fatalf("plain user: %v, %v", outs[2], errs[2])
	}
	for _, u := range []string{"bot", "star"} {
		if got := readInbox(t, s, u); len(got.fields) != 0 || len(got.lane) != 0 {
			t.Fatalf("%s got inbox writes: %+v", u, got)
		}
	}
	// Once the mark is off, the account gets its inbox again.
	if err := s.SetReceiveOnly(ctx, "bot", false); err != nil {
		t.Fatal(err)
	}
	outs, errs = s.ApplyInboxes(ctx, []InboxUpdate{upd("bot")})
	if outs[0] != InboxApplied || errs[0] != nil {
		t.Fatalf("bot after the mark was removed: %v, %v", outs[0], errs[0])
	}
}

// Two fanout owners, or any reordering, can bring a user's inbox the
// update of higher seqs before the one with a mention: the mention is
// still pending, in the lane and in the list's count.
func TestMentionBelowTheLastDeliveredSeqIsKeptInTheLaneAndTheCount(t *testing.T) {
	s := seqTestStore(t, 0)
	ctx := context.Background()
	for _, b := range [][]InboxEvent{
		{ev(InboxDelivered, 6), ev(InboxMentioned, 7), ev(InboxDelivered, 8)},
		{ev(InboxDelivered, 2), ev(InboxMentioned, 3), ev(InboxMentioned, 4)},
	} {
		outs, errs := s.ApplyInboxes(ctx, []InboxUpdate{{User: "u", Conv: "c", Form: InboxGroup, Events: b}})
		if errs[0] != nil || outs[0] != InboxApplied {
			t.Fatalf("apply %v: %v, %v", b, outs[0], errs[0])
		}
	}
	if got := readInbox(t, s, "u"); !slices.Equal(got.lane, []string{"c:3", "c:4", "c:7"}) || got.fields["c:l"] != "8" {
		t.Fatalf("lane %v, last %s; want c:3 c:4 c:7, last 8", got.lane, got.fields["c:l"])
	}
	items, err := ReadPathForTests.List(ctx, s, "u", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0].Mentions != 3 {
		t.Fatalf("list %+v, want c with 3 mentions", items)
	}
}
