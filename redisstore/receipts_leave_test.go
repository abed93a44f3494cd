package redisstore

import (
	"context"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
)

// A leave takes the member out of the receipt sets in the step that
// applies it (the sequencing script), so a member who left is never
// counted, even when the push stage's ForgetReceipts never runs.
func TestALeaveTakesTheMemberOutOfTheReceiptSetsInTheSequencingStep(t *testing.T) {
	cases := []struct {
		name    string
		leaving []string
		// wantD, wantR: delivered and read counts of seq 2 for sender a
		wantD, wantR, wantOthers int
	}{
		{"one member leaves", []string{"c"}, 1, 0, 1},
		{"two members leave in one step", []string{"b", "c"}, 0, 0, 0},
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
			epoch, err := s.rdb.HGet(ctx, s.keys.ConvMeta("g"), "epoch").Uint64()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.RaiseReceipts(ctx, ReceiptDelivered, []ReceiptMark{
				{Conv: "g", Epoch: epoch, Member: "b", Seq: 2}}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.RaiseReceipts(ctx, ReceiptPushed, []ReceiptMark{
				{Conv: "g", Epoch: epoch, Member: "c", Seq: 2}}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.RaiseReceipts(ctx, ReceiptRead, []ReceiptMark{
				{Conv: "g", Epoch: epoch, Member: "c", Seq: 2}}); err != nil {
				t.Fatal(err)
			}
			var leaves []*schemas.Message
			for _, u := range tc.leaving {
				leaves = append(leaves, memberMsg("g", "bye-"+u, u, schemas.Kind_KIND_MEMBER_LEAVE, u))
			}
			if _, err := s.Sequence(ctx, "g", leaves, nil, seqTestNow); err != nil {
				t.Fatal(err)
			}
			// no ForgetReceipts: the sets hold current members only
			for _, u := range tc.leaving {
				for _, set := range []string{s.keys.Pushed("g"), s.keys.Delivered("g"), s.keys.ReadBy("g")} {
					if err := s.rdb.ZScore(ctx, set, u).Err(); err == nil {
						t.Errorf("%s still in %s after leaving", u, set)
					}
				}
			}
			n, err := s.CountReceipts(ctx, "g", 2, "a")
			if err != nil {
				t.Fatal(err)
			}
			if n.Delivered != tc.wantD || n.Read != tc.wantR || n.Others != tc.wantOthers {
				t.Errorf("counts %+v, want delivered %d read %d of %d", n, tc.wantD, tc.wantR, tc.wantOthers)
			}
		})
	}
}
