package chstore_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// Epochs of the rebuild story below.
const (
	oldEpoch uint64 = 1_700_000_000_000
	newEpoch uint64 = 1_700_000_900_000
)

// inEpochOf sets the epoch of records.
func inEpochOf(epoch uint64, msgs []*schemas.Sequenced) []*schemas.Sequenced {
	for _, m := range msgs {
		m.Epoch = epoch
	}
	return msgs
}

// rebuiltStore tells the reported story for conversation "r": the history
// sink was 5 rows behind (old epoch 1..40 stored, 41..45 in flight) when
// Redis lost the conversation; a rebuild started a new epoch at seq 40,
// two new messages were sequenced (new 41, 42), then the late old rows
// arrived. Conversation "q" is the same without new messages (the new
// epoch has no row of its own yet). It returns the messages each epoch of
// "r" must read, by seq, and q's old epoch.
func rebuiltStore(t *testing.T) (s *chstore.Store, conn driver.Conn, oldR, newR map[uint64]*schemas.Sequenced) {
	t.Helper()
	s, conn = newStoreConn(t)
	ctx := testCtx(t)
	base := time.Date(2024, 5, 20, 8, 0, 0, 0, time.UTC)
	rebuiltAt := base.Add(time.Hour)
	oldRows := inEpochOf(oldEpoch, fixture("r", 1, 45, writtenAt(base)))
	newRows := inEpochOf(newEpoch, fixture("r", 41, 42, writtenAt(rebuiltAt)))
	for _, m := range newRows {
		m.Message.Body = fmt.Appendf(nil, "new epoch body %d", m.Seq) // unlike the old 41, 42
	}
	qOld := inEpochOf(oldEpoch, fixture("q", 1, 45, writtenAt(base)))
	for _, o := range []chstore.EpochOrigin{{Epoch: newEpoch, Parent: oldEpoch, Base: 40}} {
		for _, conv := range []string{"r", "q"} {
			if err := s.RecordEpoch(ctx, conv, o.Epoch, o.Parent, o.Base); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, batch := range [][]*schemas.Sequenced{oldRows[:40], qOld[:40], newRows, oldRows[40:], qOld[40:]} {
		if err := s.InsertBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	oldR, newR = map[uint64]*schemas.Sequenced{}, map[uint64]*schemas.Sequenced{}
	for _, m := range oldRows {
		oldR[m.Seq] = m
		if m.Seq <= 40 {
			c := proto.Clone(m).(*schemas.Sequenced)
			c.Epoch = newEpoch // read in the new epoch's positions
			newR[m.Seq] = c
		}
	}
	for _, m := range newRows {
		newR[m.Seq] = m
	}
	return s, conn, oldR, newR
}

// pageAll reads an epoch's whole history page by page, newest first.
func pageAll(t *testing.T, s *chstore.Store, conv string, epoch uint64, limit int) []*schemas.Sequenced {
	t.Helper()
	var got []*schemas.Sequenced
	for before := uint64(0); ; {
		msgs, hasMore, err := s.History(testCtx(t), conv, epoch, before, limit)
		if err != nil {
			t.Fatal(err)
		}
		got = append(msgs, got...)
		if !hasMore {
			return got
		}
		if len(msgs) == 0 {
			t.Fatalf("history of %s epoch %d before %d: has_more without messages", conv, epoch, before)
		}
		before = msgs[0].Seq
	}
}

func TestLateOldEpochRowsAfterARebuildAreReadInTheirOwnEpochAndHideNothing(t *testing.T) {
	s, conn, oldR, newR := rebuiltStore(t)
	ctx := testCtx(t)
	check := func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			epoch uint64
			want  map[uint64]*schemas.Sequenced
		}{
			{"new epoch", newEpoch, newR},
			{"old epoch", oldEpoch, oldR},
			{"newest epoch by default", 0, newR},
		} {
			for _, limit := range []int{1, 3, 200} {
				got := pageAll(t, s, "r", tc.epoch, limit)
				if len(got) != len(tc.want) {
					t.Fatalf("%s, pages of %d: seqs %v, want 1..%d", tc.name, limit, seqsOf(got), len(tc.want))
				}
				for i, m := range got {
					if w := tc.want[uint64(i+1)]; !proto.Equal(m, w) {
						t.Fatalf("%s, pages of %d: message %d = %v, want %v", tc.name, limit, i+1, m, w)
					}
				}
			}
			all, err := s.Range(ctx, "r", tc.epoch, 1, 100)
			if err != nil || len(all) != len(tc.want) {
				t.Fatalf("%s: Range(1..100) = %d records, %v; want %d", tc.name, len(all), err, len(tc.want))
			}
			for _, m := range all {
				if !proto.Equal(m, tc.want[m.Seq]) {
					t.Fatalf("%s: Range seq %d = %v, want %v", tc.name, m.Seq, m, tc.want[m.Seq])
				}
			}
			if top, err := s.MaxSeq(ctx, "r", tc.epoch); err != nil || top != uint64(len(tc.want)) {
				t.Fatalf("%s: MaxSeq = %d, %v; want %d", tc.name, top, err, len(tc.want))
			}
		}
		// Every message stored is counted: old 1..45 and new 41, 42.
		if n, err := s.CountMessages(ctx, "r"); err != nil || n != 47 {
			t.Fatalf("CountMessages(r) = %d, %v; want 47", n, err)
		}
		// A new epoch with no row of its own reads its parent up to its
		// base only, whatever late rows the parent got.
		q, hasMore, err := s.History(ctx, "q", newEpoch, 0, 200)
		if err != nil || hasMore || !slices.Equal(seqsOf(q), seqRange(1, 40)) {
			t.Fatalf("History(q, new epoch) = %v, %v, %v; want 1..40", seqsOf(q), hasMore, err)
		}
		if top, err := s.MaxSeq(ctx, "q", 0); err != nil || top != 40 {
			t.Fatalf("MaxSeq(q, newest epoch) = %d, %v; want 40", top, err)
		}
	}
	t.Run("before merges", check)
	// Merges keep every epoch's rows: the key holds the epoch.
	if err := conn.Exec(ctx, "OPTIMIZE TABLE history FINAL"); err != nil {
		t.Fatal(err)
	}
	t.Run("after merges", check)
	if n, err := s.SharedSeq(ctx, "r", oldEpoch, newEpoch); err != nil || n != 40 {
		t.Fatalf("SharedSeq(old, new) = %d, %v; want 40", n, err)
	}
	if latest, err := s.LatestEpoch(ctx, "q"); err != nil || latest != newEpoch {
		t.Fatalf("LatestEpoch(q) = %d, %v; want the new epoch %d", latest, err, newEpoch)
	}
}

func TestMembershipChangesAreReadInTheEpochAsked(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	at := writtenAt(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	old := inEpochOf(oldEpoch, fixture("g", 1, 8, at))
	neu := inEpochOf(newEpoch, fixture("g", 6, 7, at))
	old[0].Message.Kind, old[6].Message.Kind = schemas.Kind_KIND_MEMBER_JOIN, schemas.Kind_KIND_MEMBER_JOIN // old 1, 7
	neu[0].Message.Kind = schemas.Kind_KIND_MEMBER_LEAVE                                                    // new 6
	if err := s.RecordEpoch(ctx, "g", newEpoch, oldEpoch, 5); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertBatch(ctx, append(old, neu...)); err != nil {
		t.Fatal(err)
	}
	for epoch, want := range map[uint64][]uint64{oldEpoch: {1, 7}, newEpoch: {1, 6}} {
		recs, err := s.MembershipChanges(ctx, "g", epoch, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqsOf(recs); !slices.Equal(got, want) {
			t.Fatalf("membership of epoch %d: seqs %v, want %v", epoch, got, want)
		}
	}
}

func TestRecordEpochRefusesAParentThatIsNotEarlier(t *testing.T) {
	s := newStore(t)
	for _, o := range []chstore.EpochOrigin{{Epoch: 5, Parent: 5}, {Epoch: 5, Parent: 9}, {Epoch: 5, Parent: 0}} {
		if err := s.RecordEpoch(testCtx(t), "c", o.Epoch, o.Parent, o.Base); err == nil {
			t.Errorf("RecordEpoch(%+v) accepted", o)
		}
	}
}
