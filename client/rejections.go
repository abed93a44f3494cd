package client

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"github.com/offlinebox/offlinebox/wire"
	"net/http"
	"strconv"
	"time"
)

// Rejection is a message of the user's that the pipeline refused for
// good (GET /v1/rejections, or the live channel's rejected frame): it
// never gets a seq.
type Rejection = wire.Rejection

// The codes a refusal is named by (Rejection.Code, Rejected.Code). A
// server older than codes sends none: Code is then empty.
const (
	RefusalNotAMember  = "not_a_member"
	RefusalNotAllowed  = "not_allowed"
	RefusalTooLarge    = "too_large"
	RefusalInvalid     = "invalid"
	RefusalUnavailable = "conversation_unavailable"
	RefusalFailed      = "not_sent"
)

// Rejections reads the user's refused messages at or after sinceMS,
// oldest first (the server keeps the newest 200 for a week).
func (c *Client) Rejections(ctx context.Context, sinceMS int64) ([]Rejection, error) {
	var out struct {
		Rejections []Rejection `json:"rejections"`
	}
	path := "/v1/rejections?since_ms=" + strconv.FormatInt(max(sinceMS, 0), 10)
	if _, err := c.do(ctx, http.MethodGet, path, nil, &out); err != nil {
		return nil, err
	}
	return out.Rejections, nil
}

// Rejected is an outgoing message the pipeline refused, as the device
// keeps it.
type Rejected struct {
	Outgoing
	Code   string
	Reason string
	AtMS   int64
}

// rejectionCheckAfter is how long an accepted message may stay without
// its seq before the device asks whether it was refused: a message comes
// back within milliseconds unless the pipeline is down or refused it.
// rejectionLookBack covers a server clock behind the device's.
const (
	rejectionCheckAfter = 3 * time.Second
	rejectionLookBack   = 10 * time.Minute
)

// checkRejections asks the server whether it refused the messages it
// accepted that have not come back with their seq, and moves those it
// refused from sending to rejected. A message is first asked about
// rejectionCheckAfter after it was accepted; one asked about already is
// asked about again on Run's later rounds, at most once per
// rejectionCheckAfter. It returns how soon Run should come back for a
// message not due yet (0: none waits). A failure is logged, not
// returned: the check is a side job of Run, and its next round asks
// again.
func (d *Device) checkRejections(ctx context.Context, now time.Time) time.Duration {
	var oldest, unchecked sql.NullInt64
	err := d.store.db.QueryRowContext(ctx, `SELECT min(created_ms), min(CASE WHEN accepted_ms > ? THEN accepted_ms END)
		FROM sending WHERE accepted_ms > 0`, d.rejectionsCheckedUpTo.UnixMilli()).Scan(&oldest, &unchecked)
	if err != nil {
		d.log.Warn("read messages waiting for their seq", "err", err)
		return 0
	}
	if !oldest.Valid {
		return 0
	}
	if unchecked.Valid {
		if due := time.UnixMilli(unchecked.Int64).Add(rejectionCheckAfter); now.Before(due) {
			return due.Sub(now)
		}
	} else if now.Sub(d.rejectionsAsked) < rejectionCheckAfter {
		return 0
	}
	d.rejectionsAsked, d.rejectionsCheckedUpTo = now, now.Add(-rejectionCheckAfter)
	rs, err := d.api.Rejections(ctx, oldest.Int64-rejectionLookBack.Milliseconds())
	if err == nil {
		err = d.resolveRejections(ctx, rs)
	}
	if err != nil {
		d.log.Warn("ask which sent messages were refused; asking again next round", "err", err)
	}
	return 0
}

// resolveRejections moves the refused messages still in sending to
// rejected, in one transaction; the others named are not this device's
// (or came back already) and are left alone.
func (d *Device) resolveRejections(ctx context.Context, rs []Rejection) error {
	if len(rs) == 0 {
		return nil
	}
	tx, err := d.store.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record refused messages: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, r := range rs {
		// A message sent again after an earlier refusal replaces that one.
		if _, err := tx.ExecContext(ctx, `INSERT INTO rejected (client_msg_id, conv_id, request, code, reason, at_ms)
			SELECT client_msg_id, conv_id, request, ?, ?, ? FROM sending WHERE client_msg_id = ?
			ON CONFLICT (client_msg_id) DO UPDATE SET request = excluded.request, code = excluded.code,
				reason = excluded.reason, at_ms = excluded.at_ms`,
			r.Code, r.Reason, r.AtMS, r.ClientMsgID); err != nil {
			return fmt.Errorf("record refused message %s: %w", r.ClientMsgID, err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM sending WHERE client_msg_id = ?`, r.ClientMsgID)
		if err != nil {
			return fmt.Errorf("drop refused message %s: %w", r.ClientMsgID, err)
		}
		if n, err := res.RowsAffected(); err == nil && n > 0 {
			d.log.Warn("message refused by the pipeline", "conv", r.ConvID, "client_msg_id", r.ClientMsgID,
				"code", r.Code, "reason", r.Reason)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record refused messages: %w", err)
	}
	return nil
}

// Rejected are the outgoing messages the pipeline refused, oldest first,
// with why: they left the sending table and are never sent again. One
// that came back with its seq after all (an operator repaired the
// conversation and produced its dead letters again) is not listed.
func (d *Device) Rejected(ctx context.Context) ([]Rejected, error) {
	return queryAll(ctx, d.store.db, "read refused messages", `SELECT request, code, reason, at_ms FROM rejected r
		WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.conv_id = r.conv_id AND m.client_msg_id = r.client_msg_id)
		ORDER BY at_ms, client_msg_id`, nil, func(scan func(...any) error, r *Rejected) error {
		var req []byte
		if err := scan(&req, &r.Code, &r.Reason, &r.AtMS); err != nil {
			return err
		}
		if err := json.Unmarshal(req, &r.Outgoing); err != nil {
			return fmt.Errorf("decode refused message: %w", err)
		}
		return nil
	})
}
