package redisstore

import (
	"fmt"
	"testing"
)

// A bounded map stays within its entries and its weight whatever is put
// in it, replaces a key's value in place, and keeps nothing heavier than
// the whole bound.
func TestABoundedMapStaysWithinItsEntriesAndItsWeight(t *testing.T) {
	cases := []struct {
		name                  string
		maxEntries, maxWeight int
		weight                func(i int) int
	}{
		{"entries only", 8, 0, func(int) int { return 1 }},
		{"weight first", 100, 50, func(i int) int { return 1 + i%7 }},
		{"both", 10, 40, func(i int) int { return 1 + i%5 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBounded[int](tc.maxEntries, tc.maxWeight)
			for i := range 1000 {
				b.put(fmt.Sprint("k", i%37), i, tc.weight(i))
				sum := 0
				for _, e := range b.m {
					sum += e.w
				}
				if len(b.m) > tc.maxEntries || tc.maxWeight > 0 && sum > tc.maxWeight || sum != b.weight {
					t.Fatalf("after put %d: %d entries, weight %d (kept as %d); bounds %d and %d", i, len(b.m), sum,
						b.weight, tc.maxEntries, tc.maxWeight)
				}
				if v, ok := b.get(fmt.Sprint("k", i%37)); !ok || v != i {
					t.Fatalf("after put %d: the key holds %d (%v)", i, v, ok)
				}
			}
		})
	}
	b := newBounded[string](4, 10)
	b.put("a", "light", 2)
	b.put("a", "too heavy", 11)
	if _, ok := b.get("a"); ok || b.weight != 0 {
		t.Fatalf("a value heavier than the bound is kept (weight %d)", b.weight)
	}
}
