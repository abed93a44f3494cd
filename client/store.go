package client

import (
	"context"
	"database/sql"
	_ "embed"
	"fmt"
	"net/url"
	"os"
	"strings"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

//go:embed store_schema.sql
var storeSchema string

// recentPerConv is how many recent message ids the store keeps in memory
// per conversation in front of the database; recentConvs bounds the
// conversations so kept.
const (
	recentPerConv = 500
	recentConvs   = 1000
)

// Store is the device's local database: SQLite with unique keys on
// (conv_id, epoch, seq) and (conv_id, client_msg_id), the per-conversation
// cursors, the gaps still to page, the outgoing messages and the cached
// conversation list. One Store per file; it is safe for concurrent use.
type Store struct {
	db     *sql.DB
	recent *recentIDs
}

// OpenStore opens (creating when missing) the database at path. Every
// commit is synced to disk before it returns, so what was acked after a
// commit survives the process being killed and the machine losing power.
func OpenStore(ctx context.Context, path string) (*Store, error) {
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(FULL)", "busy_timeout(5000)", "foreign_keys(ON)"} {
		q.Add("_pragma", p)
	}
	// Created 0600 before SQLite opens it (its journal and WAL take the
	// file's mode): the messages are the user's, not the machine's.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	_ = f.Close()
	db, err := sql.Open("sqlite", fileURI(path)+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// One writer: SQLite serialises writes anyway, and one connection
	// keeps every transaction's view simple.
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, storeSchema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("create store schema in %s: %w", path, err)
	}
	if err := addRejectedCode(ctx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("upgrade store schema in %s: %w", path, err)
	}
	return &Store{db: db, recent: newRecentIDs()}, nil
}

// addRejectedCode adds the rejected table's code column to a database
// created before refusals carried one (CREATE TABLE IF NOT EXISTS leaves
// an existing table as it was).
func addRejectedCode(ctx context.Context, db *sql.DB) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('rejected') WHERE name = 'code'`).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	_, err := db.ExecContext(ctx, `ALTER TABLE rejected ADD COLUMN code TEXT NOT NULL DEFAULT ''`)
	return err
}

// fileURI is path as an SQLite file: URI, every character the URI reads
// ('%', '?', '#') escaped, so that a path holding them names the file it
// says. An absolute path goes after an empty authority ("file:///..."),
// so one beginning "//" is not read as a host.
func fileURI(path string) string {
	var b strings.Builder
	b.WriteString("file:")
	if strings.HasPrefix(path, "/") {
		b.WriteString("//")
	}
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case c == '%' || c == '?' || c == '#' || c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// DB is the database, for an application's own reads.
func (s *Store) DB() *sql.DB { return s.db }

// Cursors are the cursors to sync with.
func (s *Store) Cursors(ctx context.Context) (map[string]Cursor, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT conv_id, epoch, seq FROM cursors WHERE seq > 0`)
	if err != nil {
		return nil, fmt.Errorf("read cursors: %w", err)
	}
	defer rows.Close()
	out := map[string]Cursor{}
	for rows.Next() {
		var id string
		var c Cursor
		if err := rows.Scan(&id, &c.Epoch, &c.Seq); err != nil {
			return nil, fmt.Errorf("read cursors: %w", err)
		}
		out[id] = c
	}
	return out, rows.Err()
}

// Unacked are the cursors stored but not yet acked (a crash came between
// the commit and the ack).
func (s *Store) Unacked(ctx context.Context) ([]AckItem, error) {
	return queryAll(ctx, s.db, "read unacked cursors", `SELECT conv_id, epoch, seq FROM cursors WHERE seq > acked`, nil,
		func(scan func(...any) error, a *AckItem) error { return scan(&a.ConvID, &a.Epoch, &a.Seq) })
}

// queryer is what the store's reads query: the database or a
// transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryAll runs q with args and reads every row into a T with row, so
// that the store's list reads share one loop: what names the read in the
// errors of the query and of scan, the row reader's scan of a row.
func queryAll[T any](ctx context.Context, db queryer, what, q string, args []any, row func(scan func(...any) error, v *T) error) ([]T, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	scan := func(dest ...any) error {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	var out []T
	for rows.Next() {
		var v T
		if err := row(scan, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// markAcked records that the server confirmed these cursors.
func (s *Store) markAcked(ctx context.Context, acks []AckItem) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record acks: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, a := range acks {
		if _, err := tx.ExecContext(ctx, `UPDATE cursors SET acked = max(acked, ?) WHERE conv_id = ? AND epoch = ?`,
			a.Seq, a.ConvID, a.Epoch); err != nil {
			return fmt.Errorf("record ack of %s: %w", a.ConvID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record acks: %w", err)
	}
	return nil
}

// StoredMessage is a message as the device holds it.
type StoredMessage = Message

// Messages are up to limit messages of conv below before (0: the
// newest), oldest first, of every epoch the device holds, newest epoch
// last.
func (s *Store) Messages(ctx context.Context, conv string, before uint64, limit int) ([]StoredMessage, error) {
	if before == 0 {
		before = 1<<63 - 1
	}
	rows, err := s.db.QueryContext(ctx, `SELECT conv_id, epoch, seq, client_msg_id, sender, kind, conv_type, content_type,
		body, mentions, mention_all, write_time_ms, send_time_ms FROM messages
		WHERE conv_id = ? AND seq < ? ORDER BY epoch DESC, seq DESC LIMIT ?`, conv, before, limit)
	if err != nil {
		return nil, fmt.Errorf("read messages of %s: %w", conv, err)
	}
	defer rows.Close()
	var out []StoredMessage
	for rows.Next() {
		var m StoredMessage
		var mentions string
		if err := rows.Scan(&m.ConvID, &m.Epoch, &m.Seq, &m.ClientMsgID, &m.Sender, &m.Kind, &m.ConvType, &m.ContentType,
			&m.Body, &mentions, &m.MentionAll, &m.WriteTimeMS, &m.SendTimeMS); err != nil {
			return nil, fmt.Errorf("read messages of %s: %w", conv, err)
		}
		if mentions != "" {
			m.Mentions = strings.Split(mentions, ",")
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read messages of %s: %w", conv, err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// Count is how many messages the device holds of conv.
func (s *Store) Count(ctx context.Context, conv string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE conv_id = ?`, conv).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count messages of %s: %w", conv, err)
	}
	return n, nil
}

// insert stores m in tx unless it is held; it reports whether it was new.
// A message that came back with its seq also leaves the sending table.
func insertMessage(ctx context.Context, tx *sql.Tx, m *Message) (bool, error) {
	res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO messages (conv_id, epoch, seq, client_msg_id, sender, kind,
		conv_type, content_type, body, mentions, mention_all, write_time_ms, send_time_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ConvID, m.Epoch, m.Seq, m.ClientMsgID, m.Sender, m.Kind, m.ConvType, m.ContentType, m.Body,
		strings.Join(m.Mentions, ","), m.MentionAll, m.WriteTimeMS, m.SendTimeMS)
	if err != nil {
		return false, fmt.Errorf("store %s seq %d: %w", m.ConvID, m.Seq, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store %s seq %d: %w", m.ConvID, m.Seq, err)
	}
	if m.ClientMsgID != "" {
		if _, err := tx.ExecContext(ctx, `DELETE FROM sending WHERE client_msg_id = ?`, m.ClientMsgID); err != nil {
			return false, fmt.Errorf("match sent %s: %w", m.ClientMsgID, err)
		}
	}
	return n == 1, nil
}

// heldSeqs are the seqs of conv's epoch held in [from, to], ascending.
func heldSeqs(ctx context.Context, tx *sql.Tx, conv string, epoch, from, to uint64) ([]uint64, error) {
	return queryAll(ctx, tx, "read held seqs of "+conv, `SELECT seq FROM messages WHERE conv_id = ? AND epoch = ? AND seq BETWEEN ? AND ?
		ORDER BY seq`, []any{conv, epoch, from, to}, func(scan func(...any) error, s *uint64) error { return scan(s) })
}

// Gap is a range of seqs (inclusive) the device lacks below its cursor.
type Gap struct {
	ConvID   string
	Epoch    uint64
	From, To uint64
}

// Gaps are the ranges still to page.
func (s *Store) Gaps(ctx context.Context) ([]Gap, error) {
	return queryAll(ctx, s.db, "read gaps", `SELECT conv_id, epoch, from_seq, to_seq FROM gaps ORDER BY conv_id, from_seq`, nil,
		func(scan func(...any) error, g *Gap) error { return scan(&g.ConvID, &g.Epoch, &g.From, &g.To) })
}

// storePage stores one page read for gap g and narrows (or drops) the
// gap in the same transaction; it returns the gap left and how many
// messages were new.
func (s *Store) storePage(ctx context.Context, g Gap, p Page) (Gap, bool, int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return g, false, 0, fmt.Errorf("store page of %s: %w", g.ConvID, err)
	}
	defer func() { _ = tx.Rollback() }()
	fresh := 0
	next := g
	for i := range p.Messages {
		m := &p.Messages[i]
		if m.Seq < g.From || m.Seq > g.To {
			continue
		}
		isNew, err := insertMessage(ctx, tx, m)
		if err != nil {
			return g, false, 0, err
		}
		if isNew {
			fresh++
		}
		next.From = max(next.From, m.Seq+1)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM gaps WHERE conv_id = ? AND epoch = ? AND from_seq = ?`,
		g.ConvID, g.Epoch, g.From); err != nil {
		return g, false, 0, fmt.Errorf("narrow gap of %s: %w", g.ConvID, err)
	}
	open := p.HasMore && next.From <= next.To && next.From > g.From
	if open {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO gaps (conv_id, epoch, from_seq, to_seq) VALUES (?, ?, ?, ?)`,
			next.ConvID, next.Epoch, next.From, next.To); err != nil {
			return g, false, 0, fmt.Errorf("narrow gap of %s: %w", g.ConvID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return g, false, 0, fmt.Errorf("store page of %s: %w", g.ConvID, err)
	}
	s.recent.addAll(p.Messages)
	return next, open, fresh, nil
}

// recentIDs are the last ids stored per conversation: a sync answer
// repeats what the device holds often (a mention in the lane and again in
// its conversation; a page overlapping a slice), and the window answers
// those without a database read. The unique keys stay the authority.
type recentIDs struct {
	convs map[string]*recentConv
}

type recentConv struct {
	ring []uint64 // epoch<<40 | seq, oldest overwritten first
	next int
	set  map[uint64]struct{}
}

func newRecentIDs() *recentIDs { return &recentIDs{convs: map[string]*recentConv{}} }

func recentKey(epoch, seq uint64) uint64 { return epoch<<40 | seq&(1<<40-1) }

func (r *recentIDs) has(m *Message) bool {
	c := r.convs[m.ConvID]
	if c == nil {
		return false
	}
	_, ok := c.set[recentKey(m.Epoch, m.Seq)]
	return ok
}

func (r *recentIDs) add(m *Message) {
	c := r.convs[m.ConvID]
	if c == nil {
		if len(r.convs) >= recentConvs {
			for id := range r.convs { // drop any one: the window is a cache
				delete(r.convs, id)
				break
			}
		}
		c = &recentConv{set: map[uint64]struct{}{}}
		r.convs[m.ConvID] = c
	}
	k := recentKey(m.Epoch, m.Seq)
	if _, ok := c.set[k]; ok {
		return
	}
	if len(c.ring) < recentPerConv {
		c.ring = append(c.ring, k)
	} else {
		delete(c.set, c.ring[c.next])
		c.ring[c.next] = k
		c.next = (c.next + 1) % recentPerConv
	}
	c.set[k] = struct{}{}
}

func (r *recentIDs) addAll(ms []Message) {
	for i := range ms {
		r.add(&ms[i])
	}
}
