package redisstore

import (
	"context"
	"testing"
)

// The checks of an ack, a read or a receipt see through ConversationBounds
// what ConversationAccess reads: membership, counters and, for a former
// member, the last seq they may name. Only a current member's earlier
// spans are left out.
func TestConversationBoundsAgreeWithAccessOnWhatSeqChecksRead(t *testing.T) {
	s := readTestStore(t, 100)
	ctx := context.Background()
	k := s.keys
	s.rdb.HSet(ctx, k.ConvMeta("g"), MetaSeq, 40, MetaEpoch, 7, MetaFirst, 3, MetaType, "g", MetaLarge, 1)
	s.rdb.HSet(ctx, k.Members("g"), "ann", 30, "bob", 2)
	s.rdb.HSet(ctx, k.PastMembers("g"), "ann", "2-10", "cid", "5-20,22-25")
	cases := []struct {
		user, conv         string
		member, left       bool
		lastReadable       uint64
		boundsSpans, spans int
	}{
		{"ann", "g", true, false, 40, 1, 2}, // a member again: the earlier span is not read
		{"bob", "g", true, false, 40, 1, 1},
		{"cid", "g", false, true, 24, 2, 2}, // left twice: both spans read
		{"dan", "g", false, false, 0, 0, 0},
		{"ann", "none", false, false, 0, 0, 0},
	}
	convs := []string{"g", "none"}
	for _, tc := range cases {
		t.Run(tc.user+" in "+tc.conv, func(t *testing.T) {
			all, err := s.ConversationAccess(ctx, tc.user, convs)
			if err != nil {
				t.Fatal(err)
			}
			some, err := s.ConversationBounds(ctx, tc.user, convs)
			if err != nil {
				t.Fatal(err)
			}
			a, b := all[tc.conv], some[tc.conv]
			if len(a.Spans) != tc.spans || len(b.Spans) != tc.boundsSpans {
				t.Fatalf("spans: access %v, bounds %v; want %d and %d", a.Spans, b.Spans, tc.spans, tc.boundsSpans)
			}
			for name, x := range map[string]ConvAccess{"access": a, "bounds": b} {
				if x.Member != tc.member || x.Left != tc.left || x.LastReadable() != tc.lastReadable {
					t.Fatalf("%s: member %v left %v last readable %d; want %v %v %d", name, x.Member, x.Left, x.LastReadable(), tc.member, tc.left, tc.lastReadable)
				}
			}
			a.Spans, b.Spans = nil, nil
			if a.Conv != b.Conv || a.Exists != b.Exists || a.Seq != b.Seq || a.Epoch != b.Epoch || a.First != b.First ||
				a.Type != b.Type || a.Large != b.Large || a.Joined != b.Joined {
				t.Fatalf("bounds %+v differ from access %+v", b, a)
			}
		})
	}
}
