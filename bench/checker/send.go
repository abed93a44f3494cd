package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/wire"
)

// post sends one JSON request as c's device and returns an error for any
// answer but 2xx (a *client.StatusError).
func post(ctx context.Context, c *client.Client, path string, in any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %w", path, &client.StatusError{Status: resp.StatusCode, Body: string(body)})
	}
	return nil
}

// send posts one message until the API takes it, and sometimes once more
// with the same client_msg_id, as a client whose answer was lost does.
func (d *device) send(ctx context.Context, m *schemas.Message) error {
	typ := "group"
	if m.GetConvType() == schemas.ConvType_CONV_TYPE_DIRECT {
		typ = "direct"
	}
	b := wire.SendRequest{ClientMsgID: m.GetClientMsgId(), ConvID: m.GetConvId(), ConvType: typ, Recipients: m.GetRecipients(),
		ContentType: m.GetContentType(), Body: m.GetBody(), QoS: "at_least_once"}
	if err := post(ctx, d.cl, "/v1/messages", b); err != nil {
		return d.failed(err)
	}
	d.stats.Sent++
	d.accepted = append(d.accepted, m)
	if d.rng.IntN(100) < d.b.ResendPercent {
		if err := post(ctx, d.cl, "/v1/messages", b); err == nil {
			d.stats.Resent++
		}
	}
	return nil
}

// flushOutbox sends every message not sent yet, retrying until ctx ends:
// once traffic stops, all of them are in the log.
func (d *device) flushOutbox(ctx context.Context) {
	for len(d.outbox) > 0 && ctx.Err() == nil {
		if err := d.send(ctx, d.outbox[0]); err != nil {
			_ = harness.Sleep(ctx, 300*time.Millisecond)
			continue
		}
		d.outbox = d.outbox[1:]
	}
}

// read sends a read receipt for a conversation the device holds, up to
// its cursor.
func (d *device) read(ctx context.Context) error {
	for id, hc := range d.st.convs {
		if hc.cursor == 0 {
			continue
		}
		body := map[string]any{"receipts": []client.AckItem{{ConvID: id, Seq: hc.cursor, Epoch: hc.epoch}}}
		err := post(ctx, d.cl, "/v1/read", body)
		switch status(err) {
		case 0:
			if err != nil {
				return d.failed(err)
			}
			d.stats.Reads++
		case http.StatusForbidden, http.StatusConflict:
		default:
			return d.failed(err)
		}
		return nil
	}
	return nil
}
