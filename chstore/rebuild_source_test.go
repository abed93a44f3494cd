package chstore_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/schemas"
)

func TestMembershipChangesListsJoinsAndLeavesOnceInSeqOrder(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	at := func(uint64) time.Time { return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) }
	recs := fixture("g", 1, 9, at)
	kinds := map[uint64]schemas.Kind{1: schemas.Kind_KIND_MEMBER_JOIN, 4: schemas.Kind_KIND_MEMBER_LEAVE, 7: schemas.Kind_KIND_MEMBER_JOIN}
	for _, r := range recs {
		if k, ok := kinds[r.Seq]; ok {
			r.Message.Kind, r.Message.Recipients = k, []string{fmt.Sprint("u", r.Seq)}
		}
	}
	// A replayed record is stored twice.
	if err := s.InsertBatch(ctx, append(recs, recs[3])); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		after uint64
		limit int
		want  []uint64
	}{
		{0, 10, []uint64{1, 4, 7}},
		{1, 10, []uint64{4, 7}},
		{0, 2, []uint64{1, 4}},
		{7, 10, nil},
	}
	for _, tc := range cases {
		got, err := s.MembershipChanges(ctx, "g", 0, tc.after, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []uint64
		for _, r := range got {
			seqs = append(seqs, r.Seq)
			if !proto.Equal(r, recs[r.Seq-1]) {
				t.Fatalf("record %d read back as %v, want %v", r.Seq, r, recs[r.Seq-1])
			}
		}
		if !slices.Equal(seqs, tc.want) {
			t.Fatalf("after %d limit %d: seqs %v, want %v", tc.after, tc.limit, seqs, tc.want)
		}
	}
	if _, err := s.MembershipChanges(ctx, "g", 0, 0, 0); err == nil {
		t.Fatal("limit 0 accepted")
	}
}

func TestConversationsPagesThroughEveryIdOnce(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	at := func(seq uint64) time.Time { return time.Date(2030, time.Month(1+seq%3), 1, 0, 0, 0, 0, time.UTC) }
	want := []string{"a", "b", "c", "d", "e"}
	for _, c := range want {
		if err := s.InsertBatch(ctx, fixture(c, 1, 3, at)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for after := ""; ; {
		page, err := s.Conversations(ctx, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1]
	}
	if !slices.Equal(got, want) {
		t.Fatalf("conversations %v, want %v", got, want)
	}
}
