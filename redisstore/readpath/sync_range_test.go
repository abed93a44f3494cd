package readpath

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// cutReference is the slice sync_range.lua must answer, computed from the
// whole timeline: the seqs of (lo, hi) above first-1 (first is 1 here),
// the newest or oldest `limit` of them, then cut from the far end to
// maxBytes of raw entry bytes (at least one entry kept).
func cutReference(sizes []int, q rangeQuery) []uint64 {
	hi := uint64(len(sizes)) + 1
	if q.hi != 0 && q.hi < hi {
		hi = q.hi
	}
	var seqs []uint64
	for s := q.lo + 1; s < hi; s++ {
		seqs = append(seqs, s)
	}
	if len(seqs) > q.limit {
		if q.fromTop {
			seqs = seqs[len(seqs)-q.limit:]
		} else {
			seqs = seqs[:q.limit]
		}
	}
	if q.maxBytes <= 0 || len(seqs) == 0 {
		return seqs
	}
	n, used := 0, 0
	for i := range seqs {
		s := seqs[i]
		if q.fromTop {
			s = seqs[len(seqs)-1-i]
		}
		if n > 0 && used+sizes[s-1] > q.maxBytes {
			break
		}
		used += sizes[s-1]
		n++
	}
	if q.fromTop {
		return seqs[len(seqs)-n:]
	}
	return seqs[:n]
}

func TestSyncRangeCutsOnBytesAsIfItReadTheWholeRange(t *testing.T) {
	s := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	rs.group("g", "ann", "bob")
	for i := range 120 {
		rs.say("g", group, "bob", "", strings.Repeat("x", (i*37)%300))
	}
	ctx := context.Background()
	raw, err := s.rdb.LRange(ctx, s.keys.Timeline("g"), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	sizes := make([]int, len(raw))
	for i, r := range raw {
		sizes[i] = len(r)
	}
	var qs []rangeQuery
	for _, top := range []bool{true, false} {
		for _, mb := range []int{0, 1, 150, 1000, 4000, 9000, 1 << 20} {
			qs = append(qs,
				rangeQuery{conv: "g", limit: 200, fromTop: top, maxBytes: mb},
				rangeQuery{conv: "g", lo: 10, hi: 90, limit: 50, fromTop: top, maxBytes: mb},
				rangeQuery{conv: "g", lo: 100, limit: 7, fromTop: top, maxBytes: mb})
		}
	}
	for _, q := range qs {
		t.Run(fmt.Sprintf("lo=%d hi=%d limit=%d top=%v max=%d", q.lo, q.hi, q.limit, q.fromTop, q.maxBytes), func(t *testing.T) {
			sls, err := s.readSlices(ctx, "ann", []rangeQuery{q})
			if err != nil {
				t.Fatal(err)
			}
			want := cutReference(sizes, q)
			if got := seqsOf(sls[0].entries); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seqs %v, want %v", got, want)
			}
		})
	}
}
