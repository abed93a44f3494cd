package chstore

import (
	"slices"
	"testing"

	"github.com/offlinebox/offlinebox/redisstore"
)

func TestHistoryOfAnEpochThatPartedServesOnlySpansAndWhatMembersAcrossThePartingGot(t *testing.T) {
	// Spans: seqs 1..4 (left at 5), and from 8 on. The old epoch parted
	// from the current one after seq 6.
	spans := []redisstore.MemberSpan{{Joined: 0, Left: 5}, {Joined: 7}}
	cases := []struct {
		name   string
		rd     epochReader
		reads  []uint64 // of seqs 1..12
		below9 uint64
	}{
		{"current epoch", epochReader{spans: redisstore.ConvAccess{Seq: 10, Member: true, Spans: spans}}, []uint64{1, 2, 3, 4, 8, 9, 10, 11, 12}, 8},
		{"an older epoch, not a member across the parting",
			epochReader{spans: redisstore.ConvAccess{Seq: 10, Member: true, Spans: spans}, parted: true, upTo: 6}, []uint64{1, 2, 3, 4}, 4},
		{"an older epoch, a member across the parting",
			epochReader{spans: redisstore.ConvAccess{Seq: 10, Member: true, Spans: []redisstore.MemberSpan{{Joined: 2}}}, parted: true, upTo: 6, across: true},
			[]uint64{3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []uint64
			for s := uint64(1); s <= 12; s++ {
				if tc.rd.reads(s) {
					got = append(got, s)
				}
			}
			if !slices.Equal(got, tc.reads) {
				t.Errorf("readable %v, want %v", got, tc.reads)
			}
			if b := tc.rd.below(9); b != tc.below9 {
				t.Errorf("below 9 = %d, want %d", b, tc.below9)
			}
		})
	}
}
