package client

import (
	"context"
	"fmt"
)

// Conversations reads one page of the conversation list from the server
// (cursor: the previous page's Next) and keeps it in the database, so
// that an application can draw the list at once on its next start
// (CachedConversations).
func (d *Device) Conversations(ctx context.Context, cursor string, limit int) (ConvList, error) {
	var l ConvList
	err := d.o.Backoff.retry(ctx, func() error {
		var err error
		l, _, err = d.api.ConversationsAfter(ctx, cursor, limit)
		return err
	})
	if err != nil {
		return l, fmt.Errorf("list conversations: %w", err)
	}
	tx, err := d.store.db.BeginTx(ctx, nil)
	if err != nil {
		return l, fmt.Errorf("keep conversation list: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, c := range l.Conversations {
		p := Preview{}
		if c.Preview != nil {
			p = *c.Preview
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO conversations (conv_id, kind, large, unread, last_seq,
			read_seq, acked_seq, mentions, last_active_ms, preview_seq, preview_sender, preview_text)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, c.ConvID, c.Kind, c.Large, c.Unread, c.LastSeq, c.ReadSeq,
			c.AckedSeq, c.Mentions, c.LastActiveMS, p.Seq, p.Sender, p.Text); err != nil {
			return l, fmt.Errorf("keep conversation %s: %w", c.ConvID, err)
		}
	}
	return l, tx.Commit()
}

// CachedConversations is the list as last read, most recently active first.
func (d *Device) CachedConversations(ctx context.Context, limit int) ([]ConvItem, error) {
	return queryAll(ctx, d.store.db, "read cached conversation list", `SELECT conv_id, kind, large, unread, last_seq, read_seq, acked_seq, mentions,
		last_active_ms, preview_seq, preview_sender, preview_text FROM conversations
		ORDER BY last_active_ms DESC, conv_id LIMIT ?`, []any{limit}, func(scan func(...any) error, c *ConvItem) error {
		var p Preview
		if err := scan(&c.ConvID, &c.Kind, &c.Large, &c.Unread, &c.LastSeq, &c.ReadSeq, &c.AckedSeq, &c.Mentions,
			&c.LastActiveMS, &p.Seq, &p.Sender, &p.Text); err != nil {
			return err
		}
		if p.Seq > 0 {
			c.Preview = &p
		}
		return nil
	})
}

// Older is what LoadOlder read.
type Older struct {
	Messages []Message
	// FromHistory: the page came from the history store (beyond the
	// Redis window). Incomplete: the window ended inside the range.
	FromHistory, Incomplete bool
	// Start: nothing older exists for this user.
	Start bool
}

// LoadOlder reads up to limit messages of conv older than the oldest
// the device holds: from the Redis window while it has them, then from
// history. They are stored (under the same unique keys) but move no
// cursor: they are below it.
func (d *Device) LoadOlder(ctx context.Context, conv string, limit int) (Older, error) {
	var out Older
	var oldest, epoch uint64
	err := d.store.db.QueryRowContext(ctx, `SELECT coalesce(min(seq), 0), coalesce(max(epoch), 0) FROM messages
		WHERE conv_id = ? AND epoch = (SELECT coalesce(max(epoch), 0) FROM messages WHERE conv_id = ?)`, conv, conv).Scan(&oldest, &epoch)
	if err != nil {
		return out, fmt.Errorf("find oldest held of %s: %w", conv, err)
	}
	if oldest == 1 {
		out.Start = true
		return out, nil
	}
	var p Page
	err = d.o.Backoff.retry(ctx, func() error {
		var err error
		p, _, err = d.api.PageBefore(ctx, conv, oldest, limit)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("load older of %s: %w", conv, err)
	}
	out.Incomplete = p.Incomplete
	if len(p.Messages) == 0 && (p.Incomplete || oldest == 0 || p.FirstSeq > 1) {
		err = d.o.Backoff.retry(ctx, func() error {
			var err error
			p, _, err = d.api.History(ctx, conv, epoch, oldest, limit)
			return err
		})
		if err != nil {
			return out, fmt.Errorf("load history of %s: %w", conv, err)
		}
		out.FromHistory = true
	}
	out.Messages = p.Messages
	out.Start = len(p.Messages) == 0 && !p.HasMore
	tx, err := d.store.db.BeginTx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("store older of %s: %w", conv, err)
	}
	defer func() { _ = tx.Rollback() }()
	for i := range p.Messages {
		if _, err := insertMessage(ctx, tx, &p.Messages[i]); err != nil {
			return out, err
		}
	}
	return out, tx.Commit()
}

// Read marks conv read up to seq on every device of the user.
func (d *Device) Read(ctx context.Context, conv string, epoch, seq uint64) error {
	return d.o.Backoff.retry(ctx, func() error {
		return d.api.Read(ctx, []AckItem{{ConvID: conv, Seq: seq, Epoch: epoch}})
	})
}
