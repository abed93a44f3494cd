package chstore

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// A conversation's history is read per epoch. An epoch is either a root
// (the timeline sequencing first created: every seq of it is a row of that
// epoch) or was started by a rebuild from the history of a parent epoch at
// a base counter: its seqs 1..base are the parent's, read as the parent's
// own lineage resolves them, and only its seqs above base are rows of its
// own. The epochs table records the second kind (RecordEpoch); an epoch it
// does not name is a root.
//
// So the old epoch's rows that reach the history after a rebuild started a
// new epoch at a lower counter stay readable under the old epoch, and never
// mix into the new one's pages.

// EpochOrigin says where a rebuilt epoch came from.
type EpochOrigin struct {
	Epoch  uint64
	Parent uint64
	// Base is the counter the rebuild left: seqs 1..Base are Parent's.
	Base uint64
}

// maxLineage bounds how many rebuilds deep a view is resolved; seqs below
// a deeper lineage read as absent. (A parent is always an earlier epoch:
// RecordEpoch refuses others and viewOf reads them as roots.)
const maxLineage = 64

// span is a run of seqs (lo, hi] that a view reads from one epoch's rows.
type span struct {
	epoch, lo, hi uint64
}

// view is how one epoch's seqs map onto stored rows: spans in descending
// seq order, the first one open-ended (hi = MaxUint64), disjoint, together
// covering every seq from 1 up.
type view []span

// viewOf resolves epoch's view from the conversation's lineage.
func viewOf(epoch uint64, lineage map[uint64]EpochOrigin) view {
	var v view
	hi := uint64(math.MaxUint64)
	for e, steps := epoch, 0; steps < maxLineage; steps++ {
		o, rebuilt := lineage[e]
		if !rebuilt || o.Parent >= e {
			return append(v, span{epoch: e, lo: 0, hi: hi})
		}
		if o.Base < hi {
			v = append(v, span{epoch: e, lo: o.Base, hi: hi})
			hi = o.Base
		}
		if hi == 0 {
			return v
		}
		e = o.Parent
	}
	return v
}

// epochOf says which epoch's row a view reads for seq (0: none).
func (v view) epochOf(seq uint64) uint64 {
	for _, s := range v {
		if seq > s.lo && seq <= s.hi {
			return s.epoch
		}
	}
	return 0
}

// shared returns the highest seq up to which two views read the same rows
// (0: they share nothing).
func shared(a, b view) uint64 {
	// Both views are piecewise constant in seq; compare them at every
	// boundary, from seq 1 upwards.
	var bounds []uint64
	for _, v := range []view{a, b} {
		for _, s := range v {
			bounds = append(bounds, s.lo)
		}
	}
	upTo := uint64(math.MaxUint64)
	for _, lo := range bounds {
		if a.epochOf(lo+1) != b.epochOf(lo+1) {
			upTo = min(upTo, lo)
		}
	}
	return upTo
}

// where renders the view as a condition on (epoch, seq), with its args.
func (v view) where() (string, []any) {
	parts := make([]string, 0, len(v))
	args := make([]any, 0, 3*len(v))
	for _, s := range v {
		if s.hi == math.MaxUint64 {
			parts = append(parts, "(epoch = ? AND seq > ?)")
			args = append(args, s.epoch, s.lo)
			continue
		}
		parts = append(parts, "(epoch = ? AND seq > ? AND seq <= ?)")
		args = append(args, s.epoch, s.lo, s.hi)
	}
	return "(" + strings.Join(parts, " OR ") + ")", args
}

// RecordEpoch records that epoch starts from parent's history at counter
// base. A rebuild calls it before it commits the new epoch, so no row of
// the epoch can be read without it; recording the same origin again is
// harmless.
func (s *Store) RecordEpoch(ctx context.Context, conv string, epoch, parent, base uint64) error {
	o := EpochOrigin{Epoch: epoch, Parent: parent, Base: base}
	if err := validConv(conv); err != nil {
		return fmt.Errorf("record epoch: %w", err)
	}
	if o.Parent == 0 || o.Parent >= o.Epoch {
		return fmt.Errorf("record epoch %d of %s: %w", o.Epoch, conv, invalidf("parent %d is not an earlier epoch", o.Parent))
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.InsertTimeout)
	defer cancel()
	batch, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+epochsTable+" (conv_id, epoch, parent, base, created_at)")
	if err != nil {
		return fmt.Errorf("record epoch %d of %s: %w", o.Epoch, conv, err)
	}
	defer batch.Abort()
	if err := batch.Append(conv, o.Epoch, o.Parent, o.Base, time.Now().UTC()); err != nil {
		return fmt.Errorf("record epoch %d of %s: %w", o.Epoch, conv, err)
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("record epoch %d of %s: %w", o.Epoch, conv, err)
	}
	return nil
}

// Lineage returns the recorded origins of a conversation's rebuilt epochs,
// by epoch.
func (s *Store) Lineage(ctx context.Context, conv string) (map[uint64]EpochOrigin, error) {
	if err := validConv(conv); err != nil {
		return nil, fmt.Errorf("lineage: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	return s.lineage(ctx, conv)
}

func (s *Store) lineage(ctx context.Context, conv string) (map[uint64]EpochOrigin, error) {
	origins, err := collect(ctx, s.conn, "SELECT epoch, parent, base FROM "+epochsTable+
		" WHERE conv_id = ? ORDER BY epoch, created_at DESC LIMIT 1 BY epoch", []any{conv},
		func(rows driver.Rows, o *EpochOrigin) error { return rows.Scan(&o.Epoch, &o.Parent, &o.Base) })
	if err != nil {
		return nil, fmt.Errorf("lineage of %s: %w", conv, err)
	}
	out := make(map[uint64]EpochOrigin, len(origins))
	for _, o := range origins {
		out[o.Epoch] = o
	}
	return out, nil
}

// view reads the lineage and resolves epoch's view.
func (s *Store) view(ctx context.Context, conv string, epoch uint64) (view, error) {
	lin, err := s.lineage(ctx, conv)
	if err != nil {
		return nil, err
	}
	return viewOf(epoch, lin), nil
}

// LatestEpoch returns the newest epoch the history knows of a
// conversation (from its rows or its lineage); 0 when it knows none.
// Epochs only grow, so this is the one a rebuild continues from.
func (s *Store) LatestEpoch(ctx context.Context, conv string) (uint64, error) {
	if err := validConv(conv); err != nil {
		return 0, fmt.Errorf("latest epoch: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	epoch, _, err := s.resolve(ctx, conv, 0)
	return epoch, err
}

// SharedSeq returns the highest seq up to which epochs a and b of a
// conversation read the same messages: below it a seq means one message
// in both, above it they are different timelines.
func (s *Store) SharedSeq(ctx context.Context, conv string, a, b uint64) (uint64, error) {
	if err := validConv(conv); err != nil {
		return 0, fmt.Errorf("shared seq: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	lin, err := s.lineage(ctx, conv)
	if err != nil {
		return 0, err
	}
	return shared(viewOf(a, lin), viewOf(b, lin)), nil
}
