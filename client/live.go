package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"github.com/offlinebox/offlinebox/wire"
)

// Frame is one frame of the live channel (api/asyncapi.yaml): the fields
// of its type are set, the others zero.
type Frame struct {
	Type string `json:"type"`
	// hello
	Node          string `json:"node,omitempty"`
	ConnID        string `json:"conn_id,omitempty"`
	DeviceID      string `json:"device_id,omitempty"`
	HeartbeatMS   int64  `json:"heartbeat_ms,omitempty"`
	MaxQueueBytes int    `json:"max_queue_bytes,omitempty"`
	// hello, reauthed: the connection is closed then (4012), ms since the
	// epoch, unless Reauth brings a fresh token first
	ExpiresMS int64 `json:"expires_ms,omitempty"`
	// notice
	Conversations []NoticeConv `json:"conversations,omitempty"`
	Total         *struct {
		Conversations int    `json:"conversations"`
		Unread        uint64 `json:"unread"`
		Mentions      int    `json:"mentions"`
	} `json:"total,omitempty"`
	Replay    bool `json:"replay,omitempty"`
	Truncated bool `json:"truncated,omitempty"`
	Resync    bool `json:"resync,omitempty"`
	// message, ephemeral
	Attempt int      `json:"attempt,omitempty"`
	Message *Message `json:"message,omitempty"`
	// acked
	Acked          int      `json:"acked,omitempty"`
	EvictedDevices []string `json:"evicted_devices,omitempty"`
	// receipt
	ConvID string `json:"conv_id,omitempty"`
	Epoch  uint64 `json:"epoch,omitempty"`
	Seq    uint64 `json:"seq,omitempty"`
	// State is the furthest any recipient got: stored, pushed (written
	// to a live connection of theirs, not yet acked), delivered or read;
	// a server before it sends none. Treat an unknown state as stored.
	State            string `json:"state,omitempty"`
	Pushed           int    `json:"pushed,omitempty"`
	Delivered        int    `json:"delivered,omitempty"`
	Read             int    `json:"read,omitempty"`
	Members          int    `json:"members,omitempty"`
	PeerDeliveredSeq uint64 `json:"peer_delivered_seq,omitempty"`
	PeerReadSeq      uint64 `json:"peer_read_seq,omitempty"`
	// rejected
	ClientMsgID string `json:"client_msg_id,omitempty"`
	Reason      string `json:"reason,omitempty"`
	AtMS        int64  `json:"at_ms,omitempty"`
	// error
	Code   string `json:"code,omitempty"`
	Field  string `json:"field,omitempty"`
	Detail string `json:"detail,omitempty"`

	// Raw is the frame as it came.
	Raw json.RawMessage `json:"-"`
}

// NoticeConv is one conversation of a pull-before notice.
type NoticeConv = wire.NoticeConv

// Live is a device's live connection. Frames are read by one goroutine
// into a bounded buffer; pings are answered there.
type Live struct {
	ws     *websocket.Conn
	frames chan Frame
	done   chan struct{}

	mu  sync.Mutex
	err error
}

// LiveOptions tune Dial.
type LiveOptions struct {
	// Buffer bounds the frames read ahead (256).
	Buffer int
	// HTTP is the client of the handshake (nil: the default).
	HTTP *http.Client
	// TokenAsSubprotocol passes the token as subprotocol bearer.TOKEN, as
	// a browser must, instead of the Authorization header.
	TokenAsSubprotocol bool
}

// ErrLiveClosed is returned once the connection ended; CloseStatus tells
// the code.
var ErrLiveClosed = errors.New("live connection closed")

// DialLive opens the live channel.
func (c *Client) DialLive(ctx context.Context, o LiveOptions) (*Live, error) {
	if o.Buffer == 0 {
		o.Buffer = 256
	}
	u := strings.Replace(c.Base, "http", "ws", 1) + "/v1/live"
	opts := &websocket.DialOptions{HTTPClient: o.HTTP, Subprotocols: []string{"offlinebox.v1"}}
	if o.TokenAsSubprotocol {
		opts.Subprotocols = append(opts.Subprotocols, "bearer."+c.Token)
	} else {
		opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + c.Token}}
	}
	ws, resp, err := websocket.Dial(ctx, u, opts)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dial live: %w", &StatusError{Status: resp.StatusCode, Body: err.Error()})
		}
		return nil, fmt.Errorf("dial live: %w", err)
	}
	ws.SetReadLimit(4 << 20)
	l := &Live{ws: ws, frames: make(chan Frame, o.Buffer), done: make(chan struct{})}
	go l.read()
	return l, nil
}

func (l *Live) read() {
	defer close(l.frames)
	for {
		_, data, err := l.ws.Read(context.Background())
		if err != nil {
			l.mu.Lock()
			l.err = err
			l.mu.Unlock()
			return
		}
		f, err := decodeFrame(data)
		if err != nil {
			continue
		}
		f.Raw = data
		if f.Type == "ping" {
			_ = l.send(context.Background(), map[string]string{"type": "pong"})
			continue
		}
		select {
		case l.frames <- f:
		case <-l.done:
			return
		}
	}
}

// Next returns the next frame (ErrLiveClosed once the connection ended).
func (l *Live) Next(ctx context.Context) (Frame, error) {
	select {
	case f, ok := <-l.frames:
		if !ok {
			return Frame{}, fmt.Errorf("%w: %v", ErrLiveClosed, l.Err())
		}
		return f, nil
	case <-ctx.Done():
		return Frame{}, ctx.Err()
	}
}

// Err is why the connection ended (nil while open).
func (l *Live) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// CloseStatus is the close code the server ended the connection with
// (-1 when none, or still open).
func (l *Live) CloseStatus() int { return int(websocket.CloseStatus(l.Err())) }

func (l *Live) send(ctx context.Context, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return l.ws.Write(ctx, websocket.MessageText, data)
}

// Ack acknowledges what the device stored (cumulative per conversation).
// The server answers with an acked frame when reply is set, or when the
// device must learn something (it was evicted and must resync, or the ack
// evicted others); an ack that fails is always answered with an error
// frame.
func (l *Live) Ack(ctx context.Context, items []AckItem, reply bool) error {
	return l.send(ctx, map[string]any{"type": "ack", "acks": items, "reply": reply})
}

// Typing tells the conversation's online members (QoS 0: once, never
// stored).
func (l *Live) Typing(ctx context.Context, conv string) error {
	return l.send(ctx, map[string]any{"type": "typing", "conv_id": conv})
}

// Reauth gives the connection a fresh token of the same user and device
// before the one it opened with expires (Frame.ExpiresMS of hello); the
// server answers reauthed with the new end, or an error frame.
func (l *Live) Reauth(ctx context.Context, token string) error {
	return l.send(ctx, map[string]any{"type": "reauth", "token": token})
}

// SendRaw sends any frame (tests of the server's answers).
func (l *Live) SendRaw(ctx context.Context, data []byte) error {
	return l.ws.Write(ctx, websocket.MessageText, data)
}

// Close ends the connection normally.
func (l *Live) Close() error {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return l.ws.Close(websocket.StatusNormalClosure, "")
}

// CloseNow drops the connection without a close handshake (a device that
// vanished).
func (l *Live) CloseNow() error {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return l.ws.CloseNow()
}
