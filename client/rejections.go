package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Rejection is a message of the user's that the pipeline refused for
// good (GET /v1/rejections, or the live channel's rejected frame): it
// never gets a seq.
type Rejection struct {
	ConvID      string `json:"conv_id"`
	ClientMsgID string `json:"client_msg_id"`
	Reason      string `json:"reason"`
	AtMS        int64  `json:"at_ms"`
}

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

// checkRejections asks the server about the messages it accepted a while
// ago that have not come back with their seq, and moves those it refused
// from sending to rejected. It asks at most once per rejectionCheckAfter,
// and only while such a message waits.
func (d *Device) checkRejections(ctx context.Context, now time.Time) error {
	if now.Sub(d.rejectionsChecked) < rejectionCheckAfter {
		return nil
	}
	var oldest int64
	err := d.store.db.QueryRowContext(ctx, `SELECT coalesce(min(created_ms), 0) FROM sending
		WHERE accepted_ms > 0 AND accepted_ms <= ?`, now.Add(-rejectionCheckAfter).UnixMilli()).Scan(&oldest)
	if err != nil {
		return fmt.Errorf("read messages waiting for their seq: %w", err)
	}
	if oldest == 0 {
		return nil
	}
	d.rejectionsChecked = now
	rs, err := d.api.Rejections(ctx, oldest-rejectionLookBack.Milliseconds())
	if err != nil {
		return fmt.Errorf("read refused messages: %w", err)
	}
	return d.resolveRejections(ctx, rs)
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
		res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO rejected (client_msg_id, conv_id, request, reason, at_ms)
			SELECT client_msg_id, conv_id, request, ?, ? FROM sending WHERE client_msg_id = ?`, r.Reason, r.AtMS, r.ClientMsgID)
		if err != nil {
			return fmt.Errorf("record refused message %s: %w", r.ClientMsgID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM sending WHERE client_msg_id = ?`, r.ClientMsgID); err != nil {
			return fmt.Errorf("drop refused message %s: %w", r.ClientMsgID, err)
		}
		d.log.Warn("message refused by the pipeline", "conv", r.ConvID, "client_msg_id", r.ClientMsgID, "reason", r.Reason)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record refused messages: %w", err)
	}
	return nil
}

// Rejected are the outgoing messages the pipeline refused, oldest first,
// with why: they left the sending table and are never sent again.
func (d *Device) Rejected(ctx context.Context) ([]Rejected, error) {
	rows, err := d.store.db.QueryContext(ctx, `SELECT request, reason, at_ms FROM rejected ORDER BY at_ms, client_msg_id`)
	if err != nil {
		return nil, fmt.Errorf("read refused messages: %w", err)
	}
	defer rows.Close()
	var out []Rejected
	for rows.Next() {
		var req []byte
		var r Rejected
		if err := rows.Scan(&req, &r.Reason, &r.AtMS); err != nil {
			return nil, fmt.Errorf("read refused messages: %w", err)
		}
		if err := json.Unmarshal(req, &r.Outgoing); err != nil {
			return nil, fmt.Errorf("decode refused message: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
