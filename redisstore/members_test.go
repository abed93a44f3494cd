package redisstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
)

func TestMembersPagesThroughALargeGroup(t *testing.T) {
	s := seqTestStore(t, 0)
	ctx := context.Background()
	var founders, later []string
	for i := range 2500 {
		founders = append(founders, fmt.Sprintf("u%d", i))
	}
	for i := range 3 {
		later = append(later, fmt.Sprintf("late%d", i))
	}
	join := schemas.Kind_KIND_MEMBER_JOIN
	res, err := s.Sequence(ctx, "g", []*schemas.Message{
		memberMsg("g", "j1", "u0", join, founders...),
		memberMsg("g", "j2", "u0", join, later...),
	}, nil, seqTestNow)
	if err != nil {
		t.Fatal(err)
	}
	if res.LargeFrom != 1 || res.LargeConverted {
		t.Fatalf("large from %d converted %v, want large from the founding record", res.LargeFrom, res.LargeConverted)
	}
	got, err := s.Members(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(founders)+len(later) {
		t.Fatalf("%d members, want %d", len(got), len(founders)+len(later))
	}
	for _, u := range founders {
		if seq, ok := got[u]; !ok || seq != 0 {
			t.Fatalf("founder %s: seq %d (member %v), want 0", u, seq, ok)
		}
	}
	for _, u := range later {
		if got[u] != 2 {
			t.Fatalf("%s joined at %d, want 2", u, got[u])
		}
	}
	if err := s.MarkLargeConverted(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	res, err = s.Sequence(ctx, "g", []*schemas.Message{groupMsg("g", "m1", "u1")}, nil, seqTestNow)
	if err != nil {
		t.Fatal(err)
	}
	if !res.LargeConverted {
		t.Fatal("sequence does not report the conversion")
	}
}
