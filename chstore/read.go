package chstore

import (
	"context"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/offlinebox/offlinebox/schemas"
)

// Bounds of the reads.
const (
	// MaxHistoryLimit is the largest page History returns.
	MaxHistoryLimit = 200
	// MaxRangeSpan is the most seqs one Range may span.
	MaxRangeSpan = 10000
)

// Every read collapses replays itself instead of trusting FINAL or a merge
// that may not have happened yet: per seq it keeps the copy with the latest
// write time (the one ReplacingMergeTree keeps too). LIMIT 1 BY also folds
// copies that landed in different monthly partitions, which no merge does.
const (
	readColumns = "conv_id, seq, epoch, conv_type, kind, sender, recipients, mentions, " +
		"mention_all, qos, content_type, client_msg_id, body, send_time_ms, write_time_ms"
	selectDesc = "SELECT " + readColumns + " FROM messages" +
		" WHERE conv_id = ? AND seq >= ? AND seq < ?" +
		" ORDER BY seq DESC, write_time_ms DESC LIMIT 1 BY seq LIMIT ?"
	selectAsc = "SELECT " + readColumns + " FROM messages" +
		" WHERE conv_id = ? AND seq >= ? AND seq <= ?" +
		" ORDER BY seq ASC, write_time_ms DESC LIMIT 1 BY seq"
)

// History returns the page of a conversation's messages just below
// beforeSeq (beforeSeq 0: below the newest), at most limit of them, in
// ascending seq; hasMore says whether older ones exist.
//
// The page is the newest `limit` distinct seqs below beforeSeq that the table
// holds, so pages taken with beforeSeq = the first seq of the previous page
// join without gap or overlap.
func (s *Store) History(ctx context.Context, conv string, beforeSeq uint64, limit int) (page []*schemas.Sequenced, hasMore bool, err error) {
	if err := schemas.ValidID("conv_id", conv); err != nil {
		return nil, false, fmt.Errorf("history: %w: %w", ErrInvalid, err)
	}
	if limit < 1 || limit > MaxHistoryLimit {
		return nil, false, fmt.Errorf("history %s: %w", conv, invalidf("limit %d is outside 1..%d", limit, MaxHistoryLimit))
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	if beforeSeq == 0 {
		top, err := s.maxSeq(ctx, conv)
		if err != nil || top == 0 {
			return nil, false, err
		}
		beforeSeq = top + 1
	}
	want := uint64(limit) + 1
	// Seqs are contiguous, so the `want` seqs just below beforeSeq usually
	// are the page and its has-more probe: read only that slice of the key.
	// Fewer rows there means a hole (retention dropped older months, or the
	// seq is near 1); then ask without the lower bound, which reads only the
	// few rows that remain below.
	lo := uint64(0)
	if beforeSeq > want {
		lo = beforeSeq - want
	}
	page, err = s.selectMessages(ctx, selectDesc, conv, lo, beforeSeq, want)
	if err == nil && uint64(len(page)) < want && lo > 0 {
		page, err = s.selectMessages(ctx, selectDesc, conv, uint64(0), beforeSeq, want)
	}
	if err != nil {
		return nil, false, fmt.Errorf("history %s before %d: %w", conv, beforeSeq, err)
	}
	if len(page) > limit {
		page, hasMore = page[:limit], true
	}
	for i, j := 0, len(page)-1; i < j; i, j = i+1, j-1 {
		page[i], page[j] = page[j], page[i]
	}
	return page, hasMore, nil
}

// Range returns a conversation's messages with fromSeq <= seq <= toSeq in
// ascending seq, each once; seqs the table does not hold are absent. It
// serves rebuilding the Redis timeline; a span above MaxRangeSpan is
// refused, page through it instead.
func (s *Store) Range(ctx context.Context, conv string, fromSeq, toSeq uint64) ([]*schemas.Sequenced, error) {
	if err := schemas.ValidID("conv_id", conv); err != nil {
		return nil, fmt.Errorf("range: %w: %w", ErrInvalid, err)
	}
	if fromSeq < 1 || toSeq < fromSeq || toSeq-fromSeq >= MaxRangeSpan {
		return nil, fmt.Errorf("range %s: %w", conv,
			invalidf("seqs %d..%d are not an ascending span of at most %d from 1 up", fromSeq, toSeq, MaxRangeSpan))
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	msgs, err := s.selectMessages(ctx, selectAsc, conv, fromSeq, toSeq)
	if err != nil {
		return nil, fmt.Errorf("range %s %d..%d: %w", conv, fromSeq, toSeq, err)
	}
	return msgs, nil
}

// MaxSeq returns the highest seq the table holds for a conversation, 0 when
// it holds none.
func (s *Store) MaxSeq(ctx context.Context, conv string) (uint64, error) {
	if err := schemas.ValidID("conv_id", conv); err != nil {
		return 0, fmt.Errorf("max seq: %w: %w", ErrInvalid, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	return s.maxSeq(ctx, conv)
}

func (s *Store) maxSeq(ctx context.Context, conv string) (uint64, error) {
	var top uint64
	if err := s.conn.QueryRow(ctx, "SELECT max(seq) FROM messages WHERE conv_id = ?", conv).Scan(&top); err != nil {
		return 0, fmt.Errorf("max seq %s: %w", conv, err)
	}
	return top, nil
}

// CountMessages returns how many distinct seqs the table holds for a
// conversation: replays count once.
func (s *Store) CountMessages(ctx context.Context, conv string) (uint64, error) {
	if err := schemas.ValidID("conv_id", conv); err != nil {
		return 0, fmt.Errorf("count messages: %w: %w", ErrInvalid, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	var n uint64
	if err := s.conn.QueryRow(ctx, "SELECT uniqExact(seq) FROM messages WHERE conv_id = ?", conv).Scan(&n); err != nil {
		return 0, fmt.Errorf("count messages %s: %w", conv, err)
	}
	return n, nil
}

func (s *Store) selectMessages(ctx context.Context, query string, args ...any) ([]*schemas.Sequenced, error) {
	rows, err := s.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*schemas.Sequenced
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// scanMessage reads one row of readColumns.
func scanMessage(rows driver.Rows) (*schemas.Sequenced, error) {
	var (
		m                             schemas.Sequenced
		msg                           schemas.Message
		convType, kind, qos, body     string
		mentionAll                    uint8
		recipients, mentions          []string
		convID, sender, ctype, client string
		seq, epoch                    uint64
		sendMs, writeMs               int64
	)
	err := rows.Scan(&convID, &seq, &epoch, &convType, &kind, &sender, &recipients, &mentions,
		&mentionAll, &qos, &ctype, &client, &body, &sendMs, &writeMs)
	if err != nil {
		return nil, fmt.Errorf("scan message: %w", err)
	}
	msg.ConvId, msg.ConvType, msg.Kind, msg.Sender = convID, enumOr(schemas.ParseConvType, convType), enumOr(schemas.ParseKind, kind), sender
	msg.Recipients, msg.Mentions, msg.MentionAll, msg.Qos = recipients, mentions, mentionAll != 0, enumOr(schemas.ParseQoS, qos)
	msg.ContentType, msg.ClientMsgId, msg.Body, msg.SendTimeMs = ctype, client, []byte(body), sendMs
	m.Message, m.Seq, m.Epoch, m.WriteTimeMs = &msg, seq, epoch, writeMs
	return &m, nil
}

// enumOr parses an Enum8 column; a name this version does not know reads as
// the unspecified value, as the column's own default would.
func enumOr[E ~int32](parse func(string) (E, bool), name string) E {
	v, _ := parse(name)
	return v
}
