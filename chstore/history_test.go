package chstore_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// replayedStore holds conversation "a" (seqs 1..300) and "b" (1..50), with
// seqs 151..300 of "a" inserted twice as Kafka would replay them, and seqs
// 1..10 sequenced again 40 days later (a copy in another partition). It
// returns the messages a reader must see for "a", by seq.
func replayedStore(t *testing.T) (*chstore.Store, map[uint64]*schemas.Sequenced) {
	t.Helper()
	s := newStore(t)
	ctx := testCtx(t)
	base := time.Date(2024, 5, 20, 8, 0, 0, 0, time.UTC)
	a := fixture("a", 1, 300, writtenAt(base))
	b := fixture("b", 1, 50, writtenAt(base))
	late := fixture("a", 1, 10, writtenAt(base.Add(40*24*time.Hour)))
	for _, batch := range [][]*schemas.Sequenced{a, b, a[150:], late} {
		if err := s.InsertBatch(ctx, batch); err != nil {
			t.Fatalf("insert: %v", err)
		}
	}
	want := make(map[uint64]*schemas.Sequenced)
	for _, m := range append(a, late...) {
		want[m.GetSeq()] = m // the later copy of 1..10 wins
	}
	return s, want
}

func TestReplayedRecordsAreReadAndCountedOnce(t *testing.T) {
	s, want := replayedStore(t)
	ctx := testCtx(t)
	for conv, n := range map[string]uint64{"a": 300, "b": 50, "nobody": 0} {
		if got, err := s.CountMessages(ctx, conv); err != nil || got != n {
			t.Errorf("CountMessages(%s) = %d, %v; want %d", conv, got, err, n)
		}
		if got, err := s.MaxSeq(ctx, conv, 0); err != nil || got != n {
			t.Errorf("MaxSeq(%s) = %d, %v; want %d", conv, got, err, n)
		}
	}
	all, err := s.Range(ctx, "a", 0, 1, 300)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 300 {
		t.Fatalf("Range(a, 1, 300) returned %d messages, want 300", len(all))
	}
	for i, m := range all {
		if w := want[uint64(i+1)]; !proto.Equal(m, w) {
			t.Fatalf("Range(a)[%d] = %v, want %v", i, m, w)
		}
	}
}

func TestHistoryPagesJoinWithoutGapOrOverlap(t *testing.T) {
	s, want := replayedStore(t)
	for _, limit := range []int{1, 7, 200} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			ctx := testCtx(t)
			var got []*schemas.Sequenced
			before := uint64(0)
			for page := 0; ; page++ {
				msgs, hasMore, err := s.History(ctx, "a", 0, before, limit)
				if err != nil {
					t.Fatal(err)
				}
				if len(msgs) == 0 || len(msgs) > limit {
					t.Fatalf("page %d before %d: %d messages, want 1..%d", page, before, len(msgs), limit)
				}
				if !slices.IsSortedFunc(msgs, func(x, y *schemas.Sequenced) int { return int(x.GetSeq()) - int(y.GetSeq()) }) {
					t.Fatalf("page %d is not in ascending seq: %v", page, seqsOf(msgs))
				}
				got = append(msgs, got...)
				before = msgs[0].GetSeq()
				if wantMore := before > 1; hasMore != wantMore {
					t.Fatalf("page %d ending at seq %d: hasMore = %v, want %v", page, before, hasMore, wantMore)
				}
				if !hasMore {
					break
				}
			}
			if len(got) != len(want) {
				t.Fatalf("pages hold %d messages, want %d", len(got), len(want))
			}
			for i, m := range got {
				if !proto.Equal(m, want[uint64(i+1)]) {
					t.Fatalf("message %d of the pages = %v, want %v", i, m, want[uint64(i+1)])
				}
			}
		})
	}
}

func TestHistoryBelowASeq(t *testing.T) {
	s, _ := replayedStore(t)
	tests := []struct {
		name     string
		before   uint64
		limit    int
		wantSeqs []uint64
		wantMore bool
	}{
		{"newest page", 0, 3, []uint64{298, 299, 300}, true},
		{"before beyond the newest", 1000, 2, []uint64{299, 300}, true},
		{"exactly down to seq 1", 4, 3, []uint64{1, 2, 3}, false},
		{"fewer than the limit left", 3, 200, []uint64{1, 2}, false},
		{"nothing below seq 1", 1, 10, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, hasMore, err := s.History(testCtx(t), "a", 0, tt.before, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got := seqsOf(msgs); !slices.Equal(got, tt.wantSeqs) || hasMore != tt.wantMore {
				t.Fatalf("History(a, %d, %d) = %v, %v; want %v, %v", tt.before, tt.limit, got, hasMore, tt.wantSeqs, tt.wantMore)
			}
		})
	}
	if msgs, hasMore, err := s.History(testCtx(t), "nobody", 0, 0, 10); err != nil || len(msgs) != 0 || hasMore {
		t.Fatalf("History of an unknown conversation = %v, %v, %v; want nothing", seqsOf(msgs), hasMore, err)
	}
}

func TestReadsRejectBadArguments(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	calls := map[string]func() error{
		"history limit 0":        func() error { _, _, err := s.History(ctx, "a", 0, 0, 0); return err },
		"history limit 201":      func() error { _, _, err := s.History(ctx, "a", 0, 0, chstore.MaxHistoryLimit+1); return err },
		"history bad conv":       func() error { _, _, err := s.History(ctx, "a:b", 0, 0, 10); return err },
		"range from 0":           func() error { _, err := s.Range(ctx, "a", 0, 0, 5); return err },
		"range backwards":        func() error { _, err := s.Range(ctx, "a", 0, 5, 4); return err },
		"range too wide":         func() error { _, err := s.Range(ctx, "a", 0, 1, chstore.MaxRangeSpan+1); return err },
		"count empty conv":       func() error { _, err := s.CountMessages(ctx, ""); return err },
		"max seq bad conv":       func() error { _, err := s.MaxSeq(ctx, "{a}", 0); return err },
		"insert without message": func() error { return s.InsertBatch(ctx, []*schemas.Sequenced{{Seq: 1, WriteTimeMs: 1}}) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, chstore.ErrInvalid) || !errors.Is(err, schemas.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func TestInsertBatchWithOneBadRecordInsertsNothing(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	batch := fixture("a", 1, 5, writtenAt(time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)))
	batch[3].Message.Kind = 42
	if err := s.InsertBatch(ctx, batch); !errors.Is(err, chstore.ErrInvalid) || !strings.Contains(err.Error(), "record 3") {
		t.Fatalf("InsertBatch = %v, want ErrInvalid naming record 3", err)
	}
	if n, err := s.CountMessages(ctx, "a"); err != nil || n != 0 {
		t.Fatalf("CountMessages after a refused batch = %d, %v; want 0", n, err)
	}
}
