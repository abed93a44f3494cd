package redisstore

import (
	"context"
	"maps"
	"slices"
	"testing"
)

func TestInboxOfANewEpochAppliesItsSeqsAndAnOldEpochReplayChangesNothing(t *testing.T) {
	d, m, o, c := InboxDelivered, InboxMentioned, InboxOwn, InboxConvertLarge
	const oldE, newE = 1000, 2000
	// Before the rebuild: the old epoch delivered up to 45, the user wrote
	// 43 (read up to it) and was mentioned at 44 and 45.
	oldBatches := []InboxUpdate{
		{User: "u", Conv: "c", Form: InboxGroup, Epoch: oldE, Events: []InboxEvent{ev(d, 1), ev(d, 40), ev(d, 42)}},
		{User: "u", Conv: "c", Form: InboxGroup, Epoch: oldE, Events: []InboxEvent{ev(o, 43), ev(m, 44), ev(m, 45)}},
	}
	cases := []struct {
		name  string
		first []InboxUpdate // applied after the old epoch's batches
		want  inboxState
	}{
		{
			name: "a mention at a seq the old epoch used raises unread and fills the lane",
			first: []InboxUpdate{{User: "u", Conv: "c", Form: InboxGroup, Epoch: newE,
				Events: []InboxEvent{ev(m, 41), ev(d, 42)}}},
			want: inboxState{fields: map[string]string{"c:l": "42", "c:r": "40", "c:j": "0", "c:t": "g", "c:e": "2000"},
				lane: []string{"c:41"}, listed: 1045},
		},
		{
			name: "the user's own message in the new epoch reads up to it",
			first: []InboxUpdate{{User: "u", Conv: "c", Form: InboxGroup, Epoch: newE,
				Events: []InboxEvent{ev(o, 41), ev(d, 42)}}},
			want: inboxState{fields: map[string]string{"c:l": "42", "c:r": "41", "c:j": "0", "c:t": "g", "c:e": "2000"},
				listed: 1045}, // activity only rises (these writes are older)
		},
		{
			name: "a new epoch above the old counter keeps everything below it",
			first: []InboxUpdate{{User: "u", Conv: "c", Form: InboxGroup, Epoch: newE,
				Events: []InboxEvent{ev(m, 46)}}},
			want: inboxState{fields: map[string]string{"c:l": "46", "c:r": "43", "c:j": "0", "c:t": "g", "c:e": "2000"},
				lane: []string{"c:44", "c:45", "c:46"}, listed: 1046},
		},
		{
			name: "a lone conversion cannot tell where the epoch starts and waits for a seq",
			first: []InboxUpdate{
				{User: "u", Conv: "c", Form: InboxLarge, Epoch: newE, Events: []InboxEvent{ev(c, 0)}},
				{User: "u", Conv: "c", Form: InboxLarge, Epoch: newE, Events: []InboxEvent{ev(m, 41)}},
			},
			want: inboxState{fields: map[string]string{"c:l": "40", "c:r": "40", "c:j": "0", "c:t": "L", "c:e": "2000"},
				lane: []string{"c:41"}, large: true, listed: 1045},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := seqTestStore(t, 0)
			ctx := context.Background()
			for _, u := range append(slices.Clone(oldBatches), tc.first...) {
				outs, errs := s.ApplyInboxes(ctx, []InboxUpdate{u})
				if errs[0] != nil || outs[0] != InboxApplied {
					t.Fatalf("apply epoch %d %v: %v, %v", u.Epoch, u.Events, outs[0], errs[0])
				}
			}
			// Replays of either epoch change nothing: the old epoch's
			// records are older than the inbox's epoch, whatever their seqs.
			replays := append(slices.Clone(oldBatches), tc.first...)
			replays = append(replays, InboxUpdate{User: "u", Conv: "c", Form: InboxGroup, Epoch: oldE,
				Events: []InboxEvent{ev(m, 50), ev(d, 51)}})
			outs, errs := s.ApplyInboxes(ctx, replays)
			for i := range replays {
				if errs[i] != nil || outs[i] != InboxReplayed {
					t.Fatalf("replay %d (epoch %d): %v, %v", i, replays[i].Epoch, outs[i], errs[i])
				}
			}
			got := readInbox(t, s, "u")
			if !maps.Equal(got.fields, tc.want.fields) || !slices.Equal(got.lane, tc.want.lane) ||
				got.large != tc.want.large || got.listed != tc.want.listed {
				t.Fatalf("inbox %+v\nwant  %+v", got, tc.want)
			}
		})
	}
}

func TestInboxWrittenWithoutAnEpochAdoptsTheFirstOneItSees(t *testing.T) {
	s := seqTestStore(t, 0)
	ctx := context.Background()
	d, m := InboxDelivered, InboxMentioned
	for i, step := range []struct {
		u    InboxUpdate
		want InboxOutcome
	}{
		{InboxUpdate{User: "u", Conv: "c", Form: InboxGroup, Events: []InboxEvent{ev(d, 1), ev(m, 2)}}, InboxApplied},
		// A replay that names its epoch: still a replay, and the epoch is kept.
		{InboxUpdate{User: "u", Conv: "c", Form: InboxGroup, Epoch: 7, Events: []InboxEvent{ev(d, 1), ev(m, 2)}}, InboxReplayed},
		{InboxUpdate{User: "u", Conv: "c", Form: InboxGroup, Epoch: 7, Events: []InboxEvent{ev(d, 3)}}, InboxApplied},
		{InboxUpdate{User: "u", Conv: "c", Form: InboxGroup, Epoch: 6, Events: []InboxEvent{ev(d, 4)}}, InboxReplayed},
	} {
		if outs, errs := s.ApplyInboxes(ctx, []InboxUpdate{step.u}); errs[0] != nil || outs[0] != step.want {
			t.Fatalf("step %d: %v, %v; want %v", i, outs[0], errs[0], step.want)
		}
	}
	got := readInbox(t, s, "u")
	want := map[string]string{"c:l": "3", "c:r": "0", "c:j": "0", "c:t": "g", "c:e": "7"}
	if !maps.Equal(got.fields, want) || !slices.Equal(got.lane, []string{"c:2"}) {
		t.Fatalf("inbox %+v, want fields %v and lane [c:2]", got, want)
	}
}
