package redisstore

import (
	"context"
	"reflect"
	"testing"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

// An ack's receipts raised with the check in the script: what passes
// raises what RaiseReceipts raises for the same marks, and a refused ack
// changes nothing (the caller then checks in full, as before).
func TestAckedReceiptsRaiseOnlyWhenEveryConversationAdmitsTheAck(t *testing.T) {
	convs := []string{"ga", "gb", "big"}
	cases := []struct {
		name    string
		user    string
		items   []AckItem
		refused bool
	}{
		{"members, no epoch named", "bob", []AckItem{{Conv: "ga", Seq: 5}, {Conv: "gb", Seq: 30}}, false},
		{"the epoch named is the conversation's", "bob", []AckItem{{Conv: "ga", Seq: 5, Epoch: 7}}, false},
		{"a conversation twice, lower second", "bob", []AckItem{{Conv: "ga", Seq: 9}, {Conv: "ga", Seq: 4}, {Conv: "gb", Seq: 2}}, false},
		{"a large group is checked, not raised", "bob", []AckItem{{Conv: "big", Seq: 3}, {Conv: "ga", Seq: 3}}, false},
		{"a stranger", "mallory", []AckItem{{Conv: "ga", Seq: 5}}, true},
		{"a former member", "dora", []AckItem{{Conv: "ga", Seq: 2}}, true},
		{"one conversation of several not joined", "carol", []AckItem{{Conv: "ga", Seq: 5}, {Conv: "gb", Seq: 5}}, true},
		{"another epoch", "bob", []AckItem{{Conv: "ga", Seq: 5}, {Conv: "gb", Seq: 5, Epoch: 6}}, true},
		{"past the max", "bob", []AckItem{{Conv: "ga", Seq: 5}, {Conv: "gb", Seq: 31}}, true},
		{"a seq too long to compare exactly", "bob", []AckItem{{Conv: "ga", Seq: 18446744073709551615}}, true},
		{"a conversation that does not exist", "bob", []AckItem{{Conv: "nowhere", Seq: 1}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rdb, prefix := testenv.Redis(t)
			s, _ := receiptStore(t, rdb, prefix, convs)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			setUp := func(s *Store) {
				must(s.rdb.HDel(ctx, s.keys.Members("gb"), "carol").Err())
				must(s.rdb.HSet(ctx, s.keys.PastMembers("ga"), "dora", "0:3").Err())
				must(s.rdb.HSet(ctx, s.keys.ConvMeta("big"), MetaLarge, 1).Err())
				// Cursors raised before: bob's 6 in ga; a read by alice.
				_, err := s.RaiseReceipts(ctx, ReceiptDelivered, []ReceiptMark{{Conv: "ga", Epoch: 7, Member: "bob", Seq: 6}})
				must(err)
				_, err = s.RaiseReceipts(ctx, ReceiptRead, []ReceiptMark{{Conv: "gb", Epoch: 7, Member: "alice", Seq: 4}})
				must(err)
			}
			setUp(s)
			before := receiptCounts(t, s, convs)

			acked, raised, ok, err := s.RaiseAckedReceipts(ctx, tc.user, tc.items)
			must(err)
			if ok == tc.refused {
				t.Fatalf("raised: %v, want %v", ok, !tc.refused)
			}
			if tc.refused {
				if after := receiptCounts(t, s, convs); after != before {
					t.Fatalf("a refused ack changed the receipts:\nbefore\n%s\nafter\n%s", before, after)
				}
				return
			}
			checkedAfter := receiptCounts(t, s, convs)

			// The same ack raised as the API raised it before, on a store
			// in the state before.
			rdb2, prefix2 := testenv.Redis(t)
			s2, _ := receiptStore(t, rdb2, prefix2, convs)
			setUp(s2)
			var marks []ReceiptMark
			for _, it := range tc.items {
				if it.Conv != "big" {
					marks = append(marks, ReceiptMark{Conv: it.Conv, Epoch: 7, Member: tc.user, Seq: it.Seq})
				}
			}
			want, err := s2.RaiseReceipts(ctx, ReceiptDelivered, marks)
			must(err)
			if !reflect.DeepEqual(raised, want) {
				t.Fatalf("raised %+v, RaiseReceipts raises %+v", raised, want)
			}
			if got, want := checkedAfter, receiptCounts(t, s2, convs); got != want {
				t.Fatalf("receipts after the checked ack\n%s\nafter RaiseReceipts\n%s", got, want)
			}
			for _, it := range tc.items {
				if a := acked[it.Conv]; a.Epoch != 7 || a.Large != (it.Conv == "big") {
					t.Fatalf("%s answered as %+v", it.Conv, a)
				}
			}
		})
	}
}
