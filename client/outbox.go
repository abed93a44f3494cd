package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Pending is an outgoing message not yet back with its seq.
type Pending struct {
	Outgoing
	Attempts  int
	Accepted  bool // the server took it (202); its seq comes with a sync
	LastError string
}

// NewClientMsgID is a random client_msg_id.
func NewClientMsgID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Send stores m in the sending table (giving it a client_msg_id when it
// has none) and tries to hand it to the server once. A message the
// server did not take stays there and is retried by Flush, with the same
// client_msg_id, so the server stores it once however often it is sent.
// The error is that of the first try; the message is kept either way,
// unless the server refused it for good (a 4xx), when it is dropped and
// the error returned.
func (d *Device) Send(ctx context.Context, m Outgoing) (string, error) {
	if m.ClientMsgID == "" {
		m.ClientMsgID = NewClientMsgID()
	}
	req, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encode message %s: %w", m.ClientMsgID, err)
	}
	if _, err := d.store.db.ExecContext(ctx, `INSERT OR IGNORE INTO sending (client_msg_id, conv_id, request, created_ms)
		VALUES (?, ?, ?, ?)`, m.ClientMsgID, m.ConvID, req, time.Now().UnixMilli()); err != nil {
		return "", fmt.Errorf("keep message %s to send: %w", m.ClientMsgID, err)
	}
	return m.ClientMsgID, d.sendOne(ctx, m)
}

// sendOne makes one attempt and records its outcome.
func (d *Device) sendOne(ctx context.Context, m Outgoing) error {
	err := d.api.Send(ctx, m)
	switch {
	case err == nil:
		_, err = d.store.db.ExecContext(ctx, `UPDATE sending SET attempts = attempts + 1, accepted_ms = ?, last_error = ''
			WHERE client_msg_id = ?`, time.Now().UnixMilli(), m.ClientMsgID)
		if err != nil {
			return fmt.Errorf("record message %s sent: %w", m.ClientMsgID, err)
		}
		d.poke()
		return nil
	case retryable(err):
		_, _ = d.store.db.ExecContext(ctx, `UPDATE sending SET attempts = attempts + 1, last_error = ? WHERE client_msg_id = ?`,
			err.Error(), m.ClientMsgID)
		return err
	}
	if _, derr := d.store.db.ExecContext(ctx, `DELETE FROM sending WHERE client_msg_id = ?`, m.ClientMsgID); derr != nil {
		return errors.Join(err, derr)
	}
	return err
}

// Pending are the messages not yet back with their seq, oldest first.
func (d *Device) Pending(ctx context.Context) ([]Pending, error) {
	return queryAll(ctx, d.store.db, "read messages to send",
		`SELECT request, attempts, accepted_ms, last_error FROM sending ORDER BY created_ms, client_msg_id`, nil,
		func(scan func(...any) error, p *Pending) error {
			var req []byte
			var accepted int64
			if err := scan(&req, &p.Attempts, &accepted, &p.LastError); err != nil {
				return err
			}
			if err := json.Unmarshal(req, &p.Outgoing); err != nil {
				return fmt.Errorf("decode message to send: %w", err)
			}
			p.Accepted = accepted > 0
			return nil
		})
}

// Flush sends again every message the server has not taken, in the
// order they were written, with their own client_msg_ids; it stops at the
// first that still fails (order within a conversation matters) and
// returns how many it handed over.
func (d *Device) Flush(ctx context.Context) (int, error) {
	ps, err := d.Pending(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range ps {
		if p.Accepted {
			continue
		}
		if err := d.sendOne(ctx, p.Outgoing); err != nil {
			if retryable(err) {
				return n, fmt.Errorf("send %s: %w", p.ClientMsgID, err)
			}
			d.log.Warn("message refused by the server; dropped", "client_msg_id", p.ClientMsgID, "err", err)
			continue
		}
		n++
	}
	return n, nil
}

// poke wakes Run for a sync.
func (d *Device) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run keeps the device in step until ctx ends: it flushes what waits to
// be sent, catches up, then waits for the poll interval, a send or news
// on the live channel, and does it again. A failure reconnects after a
// full-jitter backoff, honouring Retry-After; a catch-up follows every
// reconnect of the live channel (its notice wakes it). A permanent
// failure (401, 403, 400) ends it.
func (d *Device) Run(ctx context.Context) error {
	lctx, stop := context.WithCancel(ctx)
	var live sync.WaitGroup
	defer func() { stop(); live.Wait() }()
	if !d.o.NoLive {
		live.Go(func() { d.runLive(lctx) })
	}
	failures := 0
	for {
		_, ferr := d.Flush(ctx)
		_, err := d.CatchUp(ctx)
		var due time.Duration
		if err == nil {
			due = d.checkRejections(ctx, time.Now())
		}
		err = errors.Join(ferr, err)
		wait := d.o.PollInterval
		if d.live.Load() {
			wait = d.o.LivePollInterval
		}
		if due > 0 {
			wait = min(wait, due)
		}
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && !retryable(err):
			return err
		case err != nil:
			wait = d.o.Backoff.Wait(failures, err)
			failures++
			d.log.Warn("device offline; reconnecting", "in", wait, "err", err)
		default:
			failures = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-d.wake:
			t.Stop()
		case <-t.C:
		}
	}
}
