package chstore

import (
	"math"
	"slices"
	"testing"
)

func TestViewOfPicksOneEpochPerSeqAlongTheLineage(t *testing.T) {
	const inf = math.MaxUint64
	// 10 is a root; 20 was rebuilt from 10 at 40; 30 from 20 at 50; 40 from
	// 10 at 45 (a rebuild that did not see 20 yet); 50 records itself as
	// its own parent (refused by RecordEpoch, read as a root).
	lin := map[uint64]EpochOrigin{
		20: {Epoch: 20, Parent: 10, Base: 40},
		30: {Epoch: 30, Parent: 20, Base: 50},
		40: {Epoch: 40, Parent: 10, Base: 45},
		50: {Epoch: 50, Parent: 50, Base: 3},
		60: {Epoch: 60, Parent: 20, Base: 60}, // base above its parent's own rows
	}
	tests := []struct {
		epoch uint64
		want  view
	}{
		{10, view{{10, 0, inf}}},
		{20, view{{20, 40, inf}, {10, 0, 40}}},
		{30, view{{30, 50, inf}, {20, 40, 50}, {10, 0, 40}}},
		{40, view{{40, 45, inf}, {10, 0, 45}}},
		{50, view{{50, 0, inf}}},
		{60, view{{60, 60, inf}, {20, 40, 60}, {10, 0, 40}}},
		{99, view{{99, 0, inf}}},
	}
	for _, tt := range tests {
		if got := viewOf(tt.epoch, lin); !slices.Equal(got, tt.want) {
			t.Errorf("viewOf(%d) = %v, want %v", tt.epoch, got, tt.want)
		}
	}
	// Late rows of 20 (its 41, 42) must not show through 40, which was
	// rebuilt from 10 past them.
	if e := viewOf(40, lin).epochOf(42); e != 10 {
		t.Errorf("epoch 40 reads seq 42 from %d, want 10", e)
	}
	shares := []struct {
		a, b, want uint64
	}{
		{10, 20, 40}, {20, 30, 50}, {10, 30, 40}, {20, 40, 40}, {30, 40, 40}, {10, 40, 45},
		{10, 50, 0}, {20, 20, inf},
	}
	for _, tt := range shares {
		if got := shared(viewOf(tt.a, lin), viewOf(tt.b, lin)); got != tt.want {
			t.Errorf("shared(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestViewOfStopsAtTheLineageBound(t *testing.T) {
	lin := map[uint64]EpochOrigin{}
	for e := uint64(2); e <= 200; e++ {
		lin[e] = EpochOrigin{Epoch: e, Parent: e - 1, Base: e * 10}
	}
	if v := viewOf(200, lin); len(v) != maxLineage {
		t.Fatalf("view of a 200-deep lineage has %d spans, want the bound %d", len(v), maxLineage)
	}
}
