package chstore_test

import (
	"slices"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/schemas"
)

func TestDropPartitionsBeforeDropsOnlyMonthsEndedByTheCutoff(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	month := func(y int, m time.Month) func(uint64) time.Time {
		return writtenAt(time.Date(y, m, 1, 0, 0, 0, 0, time.UTC))
	}
	// Conversation "c": 1..40 in January, 41..50 on the last second of
	// February, 51..60 in March 2024; "d" only in March.
	batches := [][]*schemas.Sequenced{
		fixture("c", 1, 40, month(2024, time.January)),
		fixture("c", 41, 50, func(uint64) time.Time { return time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC) }),
		fixture("c", 51, 60, month(2024, time.March)),
		fixture("d", 1, 5, month(2024, time.March)),
	}
	for _, b := range batches {
		if err := s.InsertBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range parts {
		ids = append(ids, p.ID)
	}
	if !slices.Equal(ids, []string{"202401", "202402", "202403"}) {
		t.Fatalf("partitions = %v, want 202401..202403", ids)
	}
	if feb := parts[1]; !feb.MaxWriteTime.Equal(time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC)) || feb.Rows != 10 {
		t.Fatalf("February partition = %+v, want 10 rows up to its last second", feb)
	}

	// The cutoff is one second before February ends: February still holds
	// younger rows and must stay.
	dropped, err := s.DropPartitionsBefore(ctx, time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC))
	if err != nil || dropped != 1 {
		t.Fatalf("DropPartitionsBefore(Feb 29 23:59:59) = %d, %v; want 1 (January)", dropped, err)
	}
	if n, err := s.CountMessages(ctx, "c"); err != nil || n != 20 {
		t.Fatalf("after dropping January: CountMessages(c) = %d, %v; want 20", n, err)
	}
	// History over the hole that retention left ends where the data ends.
	msgs, hasMore, err := s.History(ctx, "c", 0, 0, 25)
	if err != nil || hasMore || !slices.Equal(seqsOf(msgs), seqRange(41, 60)) {
		t.Fatalf("History(c) after retention = %v, %v, %v; want 41..60 without more", seqsOf(msgs), hasMore, err)
	}

	dropped, err = s.DropPartitionsBefore(ctx, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC))
	if err != nil || dropped != 1 {
		t.Fatalf("DropPartitionsBefore(Mar 1) = %d, %v; want 1 (February)", dropped, err)
	}
	for conv, n := range map[string]uint64{"c": 10, "d": 5} {
		if got, err := s.CountMessages(ctx, conv); err != nil || got != n {
			t.Fatalf("after dropping February: CountMessages(%s) = %d, %v; want %d", conv, got, err, n)
		}
	}
	if dropped, err := s.DropPartitionsBefore(ctx, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)); err != nil || dropped != 0 {
		t.Fatalf("repeating the drop = %d, %v; want 0", dropped, err)
	}
}

func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}
