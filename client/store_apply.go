package client

import (
	"context"
	"database/sql"
	"fmt"
)

// ApplyResult is what storing one sync answer did.
type ApplyResult struct {
	// Acks are the cursors to ack now that they are stored.
	Acks []AckItem
	// Stored counts new messages; Redelivered those already held.
	Stored, Redelivered int
	// Gaps counts the ranges recorded to page.
	Gaps int
}

// Apply stores one sync answer in one transaction: the messages, each
// conversation's new cursor and the gaps the answer names. It returns
// the cursors to ack; ack them only after Apply returned.
func (s *Store) Apply(ctx context.Context, resp SyncResponse) (ApplyResult, error) {
	var res ApplyResult
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("store sync answer: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var stored []Message
	put := func(m *Message) error {
		if s.recent.has(m) {
			res.Redelivered++
			return nil
		}
		isNew, err := insertMessage(ctx, tx, m)
		if err != nil {
			return err
		}
		if isNew {
			res.Stored++
			stored = append(stored, *m)
		} else {
			res.Redelivered++
		}
		return nil
	}
	for i := range resp.Mentions {
		if err := put(&resp.Mentions[i].Message); err != nil {
			return res, err
		}
	}
	for i := range resp.Conversations {
		sc := &resp.Conversations[i]
		ack, gaps, err := applyConv(ctx, tx, sc, put)
		if err != nil {
			return res, err
		}
		res.Gaps += gaps
		if ack.Seq > 0 {
			res.Acks = append(res.Acks, ack)
		}
	}
	if err := tx.Commit(); err != nil {
		return res, fmt.Errorf("store sync answer: %w", err)
	}
	s.recent.addAll(stored)
	return res, nil
}

// cursorKept reports whether a rebase leaves the device's cursor
// meaningful: a backlog or retention rebase skips ahead on the same
// timeline; another epoch, a cursor beyond the counter or an evicted
// device's resync of another epoch does not.
func cursorKept(sc *SyncConv, held Cursor) bool {
	if held.Epoch != 0 && held.Epoch != sc.Epoch {
		return false
	}
	if !sc.Rebase {
		return true
	}
	switch sc.RebaseReason {
	case "epoch", "ahead":
		return false
	}
	return true
}

// applyConv stores one conversation of a sync answer and moves its cursor.
func applyConv(ctx context.Context, tx *sql.Tx, sc *SyncConv, put func(*Message) error) (AckItem, int, error) {
	var held Cursor
	err := tx.QueryRowContext(ctx, `SELECT epoch, seq FROM cursors WHERE conv_id = ?`, sc.ConvID).Scan(&held.Epoch, &held.Seq)
	if err != nil && err != sql.ErrNoRows {
		return AckItem{}, 0, fmt.Errorf("read cursor of %s: %w", sc.ConvID, err)
	}
	kept := cursorKept(sc, held)
	cursor := held.Seq
	if !kept {
		cursor = 0
	}
	if sc.Rebase && len(sc.Messages) == 0 {
		cursor = max(cursor, sc.MaxSeq)
		if !kept {
			cursor = sc.MaxSeq
		}
	}
	for i := range sc.Messages {
		if err := put(&sc.Messages[i]); err != nil {
			return AckItem{}, 0, err
		}
		cursor = max(cursor, sc.Messages[i].Seq)
	}
	gaps := 0
	if from, to, ok := gapOfConv(sc, held.Seq, kept); ok {
		from, to, ok = trimHeld(ctx, tx, sc.ConvID, sc.Epoch, from, to)
		if ok {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO gaps (conv_id, epoch, from_seq, to_seq) VALUES (?, ?, ?, ?)`,
				sc.ConvID, sc.Epoch, from, to); err != nil {
				return AckItem{}, 0, fmt.Errorf("record gap of %s: %w", sc.ConvID, err)
			}
			gaps++
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO cursors (conv_id, epoch, seq) VALUES (?, ?, ?)
		ON CONFLICT (conv_id) DO UPDATE SET seq = excluded.seq, epoch = excluded.epoch,
		acked = CASE WHEN cursors.epoch = excluded.epoch THEN cursors.acked ELSE 0 END`,
		sc.ConvID, sc.Epoch, cursor); err != nil {
		return AckItem{}, 0, fmt.Errorf("move cursor of %s: %w", sc.ConvID, err)
	}
	return AckItem{ConvID: sc.ConvID, Seq: cursor, Epoch: sc.Epoch}, gaps, nil
}

// gapOfConv is the range older than the answer's slice that the device
// still wants: the gap the server named, or, on a rebase that kept the
// cursor, what lies between the cursor and the slice.
func gapOfConv(sc *SyncConv, cursor uint64, kept bool) (uint64, uint64, bool) {
	if len(sc.Messages) == 0 {
		return 0, 0, false
	}
	first := sc.Messages[0].Seq
	switch {
	case sc.Gap != nil && sc.Gap.From <= sc.Gap.To:
		return sc.Gap.From, sc.Gap.To, true
	case sc.Rebase && kept && first > cursor+1:
		return cursor + 1, first - 1, true
	}
	return 0, 0, false
}

// trimHeld narrows [from, to] by the seqs held at both ends: a named gap
// may cover what the device stored above its acked cursor.
func trimHeld(ctx context.Context, tx *sql.Tx, conv string, epoch, from, to uint64) (uint64, uint64, bool) {
	seqs, err := heldSeqs(ctx, tx, conv, epoch, from, to)
	if err != nil || len(seqs) == 0 {
		return from, to, true
	}
	i := 0
	for i < len(seqs) && seqs[i] == from {
		from++
		i++
	}
	for j := len(seqs) - 1; j >= i && seqs[j] == to; j-- {
		to--
	}
	return from, to, from <= to
}
