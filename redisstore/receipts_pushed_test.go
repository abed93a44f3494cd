package redisstore

import (
	"context"
	"testing"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

// Pushed cursors are raised, counted, epoch-bound and members-only as the
// delivered and read ones are.
func TestPushedCursorsAreCountedBesideDeliveredAndReadForCurrentMembersOfTheEpoch(t *testing.T) {
	type mark struct {
		kind  byte
		epoch uint64
		who   string
		seq   uint64
	}
	cases := []struct {
		name  string
		marks []mark
		leave string // taken out of the members hash after the marks
		epoch uint64 // the conversation's epoch after the marks (0: 7)
		// counts of seq 5 sent by alice
		pushed, delivered, read int
	}{
		{"a push counts as pushed only", []mark{{ReceiptPushed, 7, "bob", 5}}, "", 0, 1, 0, 0},
		{"a push below the seq is not counted", []mark{{ReceiptPushed, 7, "bob", 4}}, "", 0, 0, 0, 0},
		{"pushed then acked", []mark{{ReceiptPushed, 7, "bob", 5}, {ReceiptDelivered, 7, "bob", 5}}, "", 0, 1, 1, 0},
		{"two pushed, one read", []mark{{ReceiptPushed, 7, "bob", 6}, {ReceiptPushed, 7, "carol", 5},
			{ReceiptRead, 7, "carol", 5}}, "", 0, 2, 1, 1},
		{"the sender's own push is left out", []mark{{ReceiptPushed, 7, "alice", 5}}, "", 0, 0, 0, 0},
		{"a push of a stale epoch changes nothing", []mark{{ReceiptPushed, 6, "bob", 5}}, "", 0, 0, 0, 0},
		{"a new epoch drops the pushed cursors", []mark{{ReceiptPushed, 7, "bob", 5}}, "", 8, 0, 0, 0},
		{"a non-member's push is not raised", []mark{{ReceiptPushed, 7, "dave", 5}}, "", 0, 0, 0, 0},
		{"a leaver's push is taken out at their next mark", []mark{{ReceiptPushed, 7, "carol", 5}}, "carol", 0, 0, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rdb, prefix := testenv.Redis(t)
			s, _ := receiptStore(t, rdb, prefix, []string{"g"})
			for _, m := range tc.marks {
				if _, err := s.RaiseReceipts(ctx, m.kind, []ReceiptMark{{Conv: "g", Epoch: m.epoch, Member: m.who, Seq: m.seq}}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.leave != "" {
				s.rdb.HDel(ctx, s.keys.Members("g"), tc.leave)
				// the leaver's next mark (a late ack) cleans the sets
				if _, err := s.RaiseReceipts(ctx, ReceiptDelivered, []ReceiptMark{{Conv: "g", Epoch: 7, Member: tc.leave, Seq: 1}}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.epoch != 0 {
				s.rdb.HSet(ctx, s.keys.ConvMeta("g"), "epoch", tc.epoch)
				if _, err := s.RaiseReceipts(ctx, ReceiptDelivered, []ReceiptMark{{Conv: "g", Epoch: tc.epoch, Member: "carol", Seq: 1}}); err != nil {
					t.Fatal(err)
				}
			}
			n, err := s.CountReceipts(ctx, "g", 5, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if n.Pushed != tc.pushed || n.Delivered != tc.delivered || n.Read != tc.read {
				t.Errorf("counts %+v, want pushed %d delivered %d read %d", n, tc.pushed, tc.delivered, tc.read)
			}
		})
	}
}
