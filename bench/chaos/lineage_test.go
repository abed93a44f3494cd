package main

import (
	"testing"

	"github.com/offlinebox/offlinebox/bench/checker"
	"github.com/offlinebox/offlinebox/chstore"
)

// A rebuilt epoch's seqs up to its base carry its parent's messages: a
// place there resolves to the parent's, and the rebuilt epoch's own records
// neither carry an inherited message again nor leave one of the parent's
// above the base behind.
func TestRebuiltEpochsResolveToTheirParentAndCrossEpochFaultsCount(t *testing.T) {
	lin := lineage{"g": {
		20: {Epoch: 20, Parent: 10, Base: 3},
		30: {Epoch: 30, Parent: 20, Base: 4},
	}}
	at := func(epoch, seq uint64) checker.Place { return checker.Place{Conv: "g", Epoch: epoch, Seq: seq} }
	resolves := []struct {
		from, to checker.Place
	}{
		{at(20, 1), at(10, 1)},
		{at(20, 3), at(10, 3)},
		{at(20, 4), at(20, 4)},
		{at(30, 2), at(10, 2)},
		{at(30, 4), at(20, 4)},
		{at(30, 5), at(30, 5)},
		{at(10, 7), at(10, 7)},
		{checker.Place{Conv: "other", Epoch: 20, Seq: 1}, checker.Place{Conv: "other", Epoch: 20, Seq: 1}},
	}
	for _, r := range resolves {
		if got := lin.resolve(r.from); got != r.to {
			t.Errorf("resolve(%v) = %v, want %v", r.from, got, r.to)
		}
	}
	base := map[checker.Place]string{at(10, 1): "a", at(10, 2): "b", at(10, 3): "c", at(20, 4): "d", at(30, 5): "e"}
	with := func(extra map[checker.Place]string) map[checker.Place]string {
		out := map[checker.Place]string{}
		for p, id := range base {
			out[p] = id
		}
		for p, id := range extra {
			out[p] = id
		}
		return out
	}
	cases := []struct {
		name             string
		logged           map[checker.Place]string
		doubled, dropped int
	}{
		{"clean lineage", base, 0, 0},
		{"an inherited message sequenced again in the rebuilt epoch", with(map[checker.Place]string{at(20, 5): "b"}), 1, 0},
		{"an inherited seq logged again for another message", with(map[checker.Place]string{at(20, 2): "x"}), 1, 0},
		{"a parent's message above the base the rebuilt epoch lacks", with(map[checker.Place]string{at(10, 4): "lost"}), 0, 1},
		{"a parent's message above the base sequenced again in the rebuilt epoch", with(map[checker.Place]string{at(10, 4): "d"}), 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doubled, dropped := lin.acrossEpochs(c.logged, func(string, ...any) {})
			if doubled != c.doubled || dropped != c.dropped {
				t.Errorf("doubled %d, dropped %d; want %d, %d", doubled, dropped, c.doubled, c.dropped)
			}
		})
	}
}

// Devices that stored a rebuilt epoch's inherited seqs are checked against
// the parent's records: the same message passes, another is a reused seq,
// and a place no epoch logged stays unlogged.
func TestDevicePlacesInARebuiltEpochAreCheckedAgainstTheParentsRecords(t *testing.T) {
	lin := lineage{"g": {20: chstore.EpochOrigin{Epoch: 20, Parent: 10, Base: 2}}}
	at := func(epoch, seq uint64) checker.Place { return checker.Place{Conv: "g", Epoch: epoch, Seq: seq} }
	logged := map[checker.Place]string{at(10, 1): "a", at(10, 2): "b", at(20, 3): "c"}
	cases := []struct {
		name                        string
		placed                      map[checker.Place]map[string]bool
		inherited, reused, unlogged int
	}{
		{"inherited seqs carry the parent's messages", map[checker.Place]map[string]bool{at(20, 1): {"a": true}, at(20, 2): {"b": true}, at(20, 3): {"c": true}}, 2, 0, 0},
		{"an inherited seq carrying another message", map[checker.Place]map[string]bool{at(20, 2): {"z": true}}, 1, 1, 0},
		{"a seq above every record", map[checker.Place]map[string]bool{at(20, 4): {"d": true}}, 0, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := compareLogged(logged, nil, c.placed, lin)
			if got.Inherited != c.inherited || got.Reused != c.reused || got.Unlogged != c.unlogged {
				t.Errorf("inherited %d, reused %d, unlogged %d; want %d, %d, %d", got.Inherited, got.Reused, got.Unlogged, c.inherited, c.reused, c.unlogged)
			}
		})
	}
}
