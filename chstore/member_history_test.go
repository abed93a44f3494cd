package chstore_test

import (
	"slices"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/redisstore"
)

func TestMemberHistoryServesOnlyTheSpansTheUserBelongedTo(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	if err := s.InsertBatch(ctx, fixture("m", 1, 12, writtenAt(time.Date(2024, 6, 1, 8, 0, 0, 0, time.UTC)))); err != nil {
		t.Fatal(err)
	}
	const epoch = 77 // the fixture's
	spans := func(member bool, sp ...redisstore.MemberSpan) redisstore.ConvAccess {
		return redisstore.ConvAccess{Conv: "m", Seq: 12, Epoch: epoch, Member: member, Left: !member && len(sp) > 0, Spans: sp}
	}
	cases := []struct {
		name     string
		access   redisstore.ConvAccess
		before   uint64
		limit    int
		want     []uint64
		wantMore bool
	}{
		{"a member who joined at 5, newest page", spans(true, redisstore.MemberSpan{Joined: 5}), 0, 3, []uint64{10, 11, 12}, true},
		{"a member who joined at 5, the page down to the join", spans(true, redisstore.MemberSpan{Joined: 5}), 8, 10, []uint64{6, 7}, false},
		{"a member who left and came back: both spans, nothing between",
			spans(true, redisstore.MemberSpan{Joined: 0, Left: 5}, redisstore.MemberSpan{Joined: 8}), 0, 20, []uint64{1, 2, 3, 4, 9, 10, 11, 12}, false},
		{"a page asked in the stretch away starts at the span below",
			spans(true, redisstore.MemberSpan{Joined: 0, Left: 5}, redisstore.MemberSpan{Joined: 8}), 9, 3, []uint64{2, 3, 4}, true},
		{"a former member: the span they belonged to, from its end", spans(false, redisstore.MemberSpan{Joined: 2, Left: 6}), 0, 10, []uint64{3, 4, 5}, false},
		{"no span: nothing", spans(false), 0, 10, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			page, more, err := chstore.MemberHistory(ctx, s, "m", chstore.MemberQuery{Spans: tc.access, Member: tc.access.Member,
				Current: epoch, Before: tc.before, Limit: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			if got := seqsOf(page); !slices.Equal(got, tc.want) || more != tc.wantMore {
				t.Fatalf("page %v (more %v), want %v (more %v)", got, more, tc.want, tc.wantMore)
			}
			for _, m := range page {
				if m.GetEpoch() != epoch {
					t.Fatalf("seq %d carries epoch %d, want %d", m.GetSeq(), m.GetEpoch(), epoch)
				}
			}
		})
	}
}
