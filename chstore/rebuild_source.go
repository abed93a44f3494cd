package chstore

import (
	"context"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/offlinebox/offlinebox/schemas"
)

// What a rebuild of the Redis store needs beyond Range and MaxSeq: the
// membership records a group's member set is replayed from, and the list
// of conversations to rebuild.
const (
	membershipTail = " AND seq > ? AND kind IN ('member_join', 'member_leave')" +
		" ORDER BY seq ASC, write_time_ms DESC LIMIT 1 BY seq LIMIT ?"
	selectConversations = "SELECT DISTINCT conv_id FROM " + historyTable + " WHERE conv_id > ? ORDER BY conv_id LIMIT ?"
)

// MembershipChanges returns the join and leave records of one epoch of a
// conversation (0: the newest the history knows) with seq > afterSeq in
// ascending seq, each once, at most limit (1..MaxRangeSpan).
func (s *Store) MembershipChanges(ctx context.Context, conv string, epoch, afterSeq uint64, limit int) ([]*schemas.Sequenced, error) {
	if err := validConv(conv); err != nil {
		return nil, fmt.Errorf("membership changes: %w", err)
	}
	if limit < 1 || limit > MaxRangeSpan {
		return nil, fmt.Errorf("membership changes %s: %w", conv, invalidf("limit %d is outside 1..%d", limit, MaxRangeSpan))
	}
	recs, epoch, err := s.selectEpoch(ctx, conv, epoch, membershipTail, afterSeq, uint64(limit))
	if err != nil {
		return nil, fmt.Errorf("membership changes %s epoch %d after %d: %w", conv, epoch, afterSeq, err)
	}
	return recs, nil
}

// Conversations returns the ids of conversations the history holds that
// sort after `after` ("" : from the first), ascending, at most limit
// (1..MaxRangeSpan); pass the last id back to read the next page.
func (s *Store) Conversations(ctx context.Context, after string, limit int) ([]string, error) {
	if limit < 1 || limit > MaxRangeSpan {
		return nil, fmt.Errorf("conversations: %w", invalidf("limit %d is outside 1..%d", limit, MaxRangeSpan))
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	out, err := collect(ctx, s.conn, selectConversations, []any{after, uint64(limit)},
		func(rows driver.Rows, id *string) error { return rows.Scan(id) })
	if err != nil {
		return nil, fmt.Errorf("conversations after %q: %w", after, err)
	}
	return out, nil
}
