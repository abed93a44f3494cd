package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// errNoLive: the server has no live channel (its upgrade answered 404).
var errNoLive = errors.New("the server has no live channel")

// runLive keeps a live-channel socket open until ctx ends, waking the
// catch-up loop for every notice and push. It reconnects after a
// full-jitter backoff; a server without the channel is asked again only
// every few minutes, and Run keeps polling meanwhile.
func (d *Device) runLive(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		up, err := d.liveOnce(ctx)
		if up {
			failures = 0
		}
		wait := d.o.Backoff.Wait(failures, err)
		if errors.Is(err, errNoLive) {
			wait = 5 * time.Minute
		}
		failures++
		d.log.Debug("live channel down; polling", "retry_in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// liveOnce reads one connection until it ends; up says whether the
// server greeted it.
func (d *Device) liveOnce(ctx context.Context) (up bool, err error) {
	url := "ws" + strings.TrimPrefix(d.api.Base, "http") + "/v1/live"
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	c, resp, err := websocket.Dial(dctx, url, &websocket.DialOptions{
		HTTPHeader:   http.Header{"Authorization": []string{"Bearer " + d.api.Token}},
		Subprotocols: []string{"offlinebox.v1"},
	})
	cancel()
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return false, errNoLive
	}
	if err != nil {
		return false, fmt.Errorf("dial live channel: %w", err)
	}
	defer func() { _ = c.CloseNow() }()
	c.SetReadLimit(4 << 20)
	defer d.live.Store(false)
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return up, fmt.Errorf("read live channel: %w", err)
		}
		var f Frame
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		switch f.Type {
		case "hello":
			up = true
			d.live.Store(true)
		case "notice", "message":
			d.poke()
		case "rejected":
			rj := Rejection{ConvID: f.ConvID, ClientMsgID: f.ClientMsgID, Code: f.Code, Reason: f.Reason, AtMS: f.AtMS}
			if err := d.resolveRejections(ctx, []Rejection{rj}); err != nil {
				d.log.Warn("record a refused message; the next check finds it again", "client_msg_id", f.ClientMsgID, "err", err)
			}
		case "ping":
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := c.Write(wctx, websocket.MessageText, []byte(`{"type":"pong"}`))
			cancel()
			if err != nil {
				return up, fmt.Errorf("answer live ping: %w", err)
			}
		}
	}
}

// LiveUp reports whether the live channel is up.
func (d *Device) LiveUp() bool { return d.live.Load() }
