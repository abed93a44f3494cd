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

// The tables (DDL in schemas/clickhouse). `messages` is a view of
// historyTable kept for analysts' queries written before the epoch joined
// the key.
const (
	historyTable = "history"
	epochsTable  = "epochs"
)

// Every read collapses replays itself instead of trusting FINAL or a merge
// that may not have happened yet: per (epoch, seq) it keeps the copy with
// the latest write time (the one ReplacingMergeTree keeps too). LIMIT 1 BY
// also folds copies that landed in different monthly partitions, which no
// merge does. A read names an epoch; its view (see epochs.go) picks one
// epoch's rows for every seq, so collapsing by seq within it is collapsing
// by (epoch, seq).
const (
	readColumns = "conv_id, seq, epoch, conv_type, kind, sender, recipients, mentions, " +
		"mention_all, qos, content_type, client_msg_id, body, send_time_ms, write_time_ms, sealed_epoch, role, authority"
	selectFrom = "SELECT " + readColumns + " FROM " + historyTable + " WHERE conv_id = ? AND "
	descTail   = " AND seq >= ? AND seq < ? ORDER BY seq DESC, write_time_ms DESC LIMIT 1 BY seq LIMIT ?"
	ascTail    = " AND seq >= ? AND seq <= ? ORDER BY seq ASC, write_time_ms DESC LIMIT 1 BY seq"
)

// History returns the page of a conversation's messages of one epoch just
// below beforeSeq (beforeSeq 0: below the newest), at most limit of them,
// in ascending seq; hasMore says whether older ones exist. Epoch 0 reads
// the newest epoch the history knows.
//
// A page is read in the epoch's own positions: seqs up to where a rebuild
// started the epoch come from the epoch it was rebuilt from, and every
// message of the page carries the epoch asked for, since that is the
// position the client holds it at. An older epoch's pages show what that
// timeline held, rows that reached the history late included.
//
// The page is the newest `limit` distinct seqs below beforeSeq that the
// epoch holds, so pages taken with beforeSeq = the first seq of the
// previous page join without gap or overlap.
func (s *Store) History(ctx context.Context, conv string, epoch, beforeSeq uint64, limit int) (page []*schemas.Sequenced, hasMore bool, err error) {
	if err := validConv(conv); err != nil {
		return nil, false, fmt.Errorf("history: %w", err)
	}
	if limit < 1 || limit > MaxHistoryLimit {
		return nil, false, fmt.Errorf("history %s: %w", conv, invalidf("limit %d is outside 1..%d", limit, MaxHistoryLimit))
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	epoch, v, err := s.resolve(ctx, conv, epoch)
	if err != nil || epoch == 0 {
		return nil, false, err
	}
	if beforeSeq == 0 {
		top, err := s.maxSeq(ctx, conv, v)
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
	cond, args := v.where()
	query := selectFrom + cond + descTail
	page, err = s.selectMessages(ctx, query, append(append([]any{conv}, args...), lo, beforeSeq, want)...)
	if err == nil && uint64(len(page)) < want && lo > 0 {
		page, err = s.selectMessages(ctx, query, append(append([]any{conv}, args...), uint64(0), beforeSeq, want)...)
	}
	if err != nil {
		return nil, false, fmt.Errorf("history %s epoch %d before %d: %w", conv, epoch, beforeSeq, err)
	}
	if len(page) > limit {
		page, hasMore = page[:limit], true
	}
	for i, j := 0, len(page)-1; i < j; i, j = i+1, j-1 {
		page[i], page[j] = page[j], page[i]
	}
	inEpoch(page, epoch)
	return page, hasMore, nil
}

// Range returns a conversation's messages of one epoch (0: the newest the
// history knows) with fromSeq <= seq <= toSeq in ascending seq, each once
// and carrying that epoch; seqs the epoch does not hold are absent. It
// serves rebuilding the Redis timeline; a span above MaxRangeSpan is
// refused, page through it instead.
func (s *Store) Range(ctx context.Context, conv string, epoch, fromSeq, toSeq uint64) ([]*schemas.Sequenced, error) {
	if err := validConv(conv); err != nil {
		return nil, fmt.Errorf("range: %w", err)
	}
	if fromSeq < 1 || toSeq < fromSeq || toSeq-fromSeq >= MaxRangeSpan {
		return nil, fmt.Errorf("range %s: %w", conv,
			invalidf("seqs %d..%d are not an ascending span of at most %d from 1 up", fromSeq, toSeq, MaxRangeSpan))
	}
	msgs, epoch, err := s.selectEpoch(ctx, conv, epoch, ascTail, fromSeq, toSeq)
	if err != nil {
		return nil, fmt.Errorf("range %s epoch %d %d..%d: %w", conv, epoch, fromSeq, toSeq, err)
	}
	return msgs, nil
}

// MaxSeq returns the highest seq one epoch of a conversation holds (0:
// the newest epoch the history knows), 0 when it holds none.
func (s *Store) MaxSeq(ctx context.Context, conv string, epoch uint64) (uint64, error) {
	if err := validConv(conv); err != nil {
		return 0, fmt.Errorf("max seq: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	epoch, v, err := s.resolve(ctx, conv, epoch)
	if err != nil || epoch == 0 {
		return 0, err
	}
	return s.maxSeq(ctx, conv, v)
}

func (s *Store) maxSeq(ctx context.Context, conv string, v view) (uint64, error) {
	cond, args := v.where()
	var top uint64
	err := s.conn.QueryRow(ctx, "SELECT max(seq) FROM "+historyTable+" WHERE conv_id = ? AND "+cond,
		append([]any{conv}, args...)...).Scan(&top)
	if err != nil {
		return 0, fmt.Errorf("max seq %s: %w", conv, err)
	}
	return top, nil
}

// resolve turns epoch 0 into the newest epoch the history knows (0 when
// it knows none) and reads the epoch's view.
func (s *Store) resolve(ctx context.Context, conv string, epoch uint64) (uint64, view, error) {
	if epoch == 0 {
		var rowsTop, linTop uint64
		if err := s.conn.QueryRow(ctx, "SELECT max(epoch) FROM "+historyTable+" WHERE conv_id = ?", conv).Scan(&rowsTop); err != nil {
			return 0, nil, fmt.Errorf("latest epoch of %s: %w", conv, err)
		}
		if err := s.conn.QueryRow(ctx, "SELECT max(epoch) FROM "+epochsTable+" WHERE conv_id = ?", conv).Scan(&linTop); err != nil {
			return 0, nil, fmt.Errorf("latest epoch of %s: %w", conv, err)
		}
		if epoch = max(rowsTop, linTop); epoch == 0 {
			return 0, nil, nil
		}
	}
	v, err := s.view(ctx, conv, epoch)
	return epoch, v, err
}

// selectEpoch reads, within the query timeout, the records of one epoch
// of conv (0: the newest the history knows) that tail selects with
// tailArgs, each marked as that epoch's; none when the history knows no
// epoch of conv. It returns the epoch read.
func (s *Store) selectEpoch(ctx context.Context, conv string, epoch uint64, tail string, tailArgs ...any) ([]*schemas.Sequenced, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	epoch, v, err := s.resolve(ctx, conv, epoch)
	if err != nil || epoch == 0 {
		return nil, epoch, err
	}
	cond, args := v.where()
	msgs, err := s.selectMessages(ctx, selectFrom+cond+tail, append(append([]any{conv}, args...), tailArgs...)...)
	if err != nil {
		return nil, epoch, err
	}
	inEpoch(msgs, epoch)
	return msgs, epoch, nil
}

// inEpoch sets the epoch a read was made in on every record of it.
func inEpoch(msgs []*schemas.Sequenced, epoch uint64) {
	for _, m := range msgs {
		m.Epoch = epoch
	}
}

// CountMessages returns how many distinct messages the table holds for a
// conversation, every epoch's own rows counted: replays count once.
func (s *Store) CountMessages(ctx context.Context, conv string) (uint64, error) {
	if err := validConv(conv); err != nil {
		return 0, fmt.Errorf("count messages: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	var n uint64
	if err := s.conn.QueryRow(ctx, "SELECT uniqExact(epoch, seq) FROM "+historyTable+" WHERE conv_id = ?", conv).Scan(&n); err != nil {
		return 0, fmt.Errorf("count messages %s: %w", conv, err)
	}
	return n, nil
}

// validConv checks a conversation id argument.
func validConv(conv string) error {
	if err := schemas.ValidID("conv_id", conv); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

func (s *Store) selectMessages(ctx context.Context, query string, args ...any) ([]*schemas.Sequenced, error) {
	return collect(ctx, s.conn, query, args, func(rows driver.Rows, m **schemas.Sequenced) error {
		var err error
		*m, err = scanMessage(rows)
		return err
	})
}

// scanMessage reads one row of readColumns.
func scanMessage(rows driver.Rows) (*schemas.Sequenced, error) {
	var (
		m                             schemas.Sequenced
		msg                           schemas.Message
		convType, kind, qos, body     string
		role, authority               string
		mentionAll                    uint8
		recipients, mentions          []string
		convID, sender, ctype, client string
		seq, epoch, sealedEpoch       uint64
		sendMs, writeMs               int64
	)
	err := rows.Scan(&convID, &seq, &epoch, &convType, &kind, &sender, &recipients, &mentions,
		&mentionAll, &qos, &ctype, &client, &body, &sendMs, &writeMs, &sealedEpoch, &role, &authority)
	if err != nil {
		return nil, fmt.Errorf("scan message: %w", err)
	}
	msg.ConvId, msg.ConvType, msg.Kind, msg.Sender = convID, enumOr(schemas.ParseConvType, convType), enumOr(schemas.ParseKind, kind), sender
	msg.Recipients, msg.Mentions, msg.MentionAll, msg.Qos = recipients, mentions, mentionAll != 0, enumOr(schemas.ParseQoS, qos)
	msg.ContentType, msg.ClientMsgId, msg.Body, msg.SendTimeMs = ctype, client, []byte(body), sendMs
	msg.SealedEpoch = sealedEpoch
	msg.Role, msg.Authority = enumOr(schemas.ParseRole, role), enumOr(schemas.ParseAuthority, authority)
	m.Message, m.Seq, m.Epoch, m.WriteTimeMs = &msg, seq, epoch, writeMs
	return &m, nil
}

// enumOr parses an Enum8 column; a name this version does not know reads as
// the unspecified value, as the column's own default would.
func enumOr[E ~int32](parse func(string) (E, bool), name string) E {
	v, _ := parse(name)
	return v
}
