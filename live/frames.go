package live

import (
	"encoding/json"
	"strconv"

	"github.com/coder/websocket"

	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/wire"
)

// Close codes of the live channel (api/asyncapi.yaml documents them).
const (
	// CloseReplaced: a newer connection of the same device took over.
	CloseReplaced websocket.StatusCode = 4001
	// CloseSlowConsumer: the client read too slowly and its send queue
	// overflowed; it catches up with POST /v1/sync and reconnects.
	CloseSlowConsumer websocket.StatusCode = 4002
	// CloseHeartbeat: the client sent nothing for the heartbeat timeout.
	CloseHeartbeat websocket.StatusCode = 4003
	// CloseUnauthorized: no valid token came in time.
	CloseUnauthorized websocket.StatusCode = 4004
	// CloseBadFrame: the client sent a frame that is not JSON of a known
	// type (the text of the close says which).
	CloseBadFrame websocket.StatusCode = 4005
	// CloseEphemeralFlood: the client kept sending typing (QoS 0) frames
	// over its budget.
	CloseEphemeralFlood websocket.StatusCode = 4008
	// CloseUserFull: the user holds as many connections on this node as
	// it may (Live.MaxPerUser; refused after an auth frame, which comes
	// after the upgrade: a token on the upgrade is refused with 429).
	CloseUserFull websocket.StatusCode = 4010
	// CloseTooManyDevices: the user has as many devices connected, on
	// every node together, as it may (Live.MaxDevices).
	CloseTooManyDevices websocket.StatusCode = 4011
	// CloseTokenExpired: the connection's token expired (its exp plus
	// the leeway passed) and no reauth frame brought a fresh one.
	CloseTokenExpired websocket.StatusCode = 4012
	// CloseRevoked: the connection's user or device was revoked (its
	// token was issued before the revocation).
	CloseRevoked websocket.StatusCode = 4013
	// CloseGoingAway (1001): the server shuts down; reconnect elsewhere.
	CloseGoingAway = websocket.StatusGoingAway
)

// LiveSubprotocol is the WebSocket subprotocol the server speaks. A
// browser, which cannot set headers on a WebSocket, passes its token as a
// second offered subprotocol "bearer.TOKEN" (or sends an auth frame).
const LiveSubprotocol = "offlinebox.v1"

// Server → client frames. Every frame is a JSON object with "type".

type helloFrame struct {
	Type          string `json:"type"` // hello
	Node          string `json:"node"`
	ConnID        string `json:"conn_id"`
	DeviceID      string `json:"device_id"`
	HeartbeatMS   int64  `json:"heartbeat_ms"`
	MaxQueueBytes int    `json:"max_queue_bytes"`
	// ExpiresMS: the connection is closed then (4012), its token's exp
	// plus the leeway, unless a reauth frame moves it.
	ExpiresMS int64 `json:"expires_ms"`
}

type noticeConvJSON = wire.NoticeConv

type noticeTotalJSON struct {
	Conversations int    `json:"conversations"`
	Unread        uint64 `json:"unread"`
	Mentions      int    `json:"mentions"`
}

// noticeFrame is the pull-before notice, the first frame after hello.
type noticeFrame struct {
	Type          string           `json:"type"` // notice
	Conversations []noticeConvJSON `json:"conversations"`
	Total         noticeTotalJSON  `json:"total"`
	// Replay: the listed messages follow on the socket (a short absence
	// with few missed); otherwise the client pulls with POST /v1/sync.
	Replay bool `json:"replay"`
	// Truncated: more conversations than the notice looks at; sync.
	Truncated bool `json:"truncated"`
	// Resync: this device was evicted and must sync in full.
	Resync bool `json:"resync"`
}

// add names one conversation and counts it in the total.
func (f *noticeFrame) add(nc noticeConvJSON) {
	f.Conversations = append(f.Conversations, nc)
	f.Total.Conversations++
	f.Total.Unread += nc.Unread
	f.Total.Mentions += nc.Mentions
}

type ackedFrame struct {
	Type           string   `json:"type"` // acked
	Acked          int      `json:"acked"`
	Resync         bool     `json:"resync"`
	EvictedDevices []string `json:"evicted_devices"`
}

type receiptFrame struct {
	Type string `json:"type"` // receipt
	Receipt
}

type rejectedFrame struct {
	Type string `json:"type"` // rejected
	Rejected
}

type errorFrame struct {
	Type   string `json:"type"` // error
	Code   string `json:"code"`
	Field  string `json:"field,omitempty"`
	Detail string `json:"detail"`
}

var (
	pingFrame = []byte(`{"type":"ping"}`)
	pongFrame = []byte(`{"type":"pong"}`)
)

// messageFrame is {"type":"message","attempt":N,"message":{...}}, the
// message encoded as every read answer shows it.
func messageFrame(sq *schemas.Sequenced, attempt int) []byte {
	out := make([]byte, 0, 256+len(sq.GetMessage().GetBody())*4/3)
	out = append(out, `{"type":"message","attempt":`...)
	out = strconv.AppendInt(out, int64(attempt), 10)
	out = append(out, `,"message":`...)
	out = edge.AppendMessageJSON(out, sq, edge.FullForm)
	return append(out, '}')
}

// ephemeralFrame is {"type":"ephemeral","message":{...}}: a QoS 0 record
// (seq 0, never stored).
func ephemeralFrame(m *schemas.Message) []byte {
	return []byte(`{"type":"ephemeral","message":` + string(edge.AppendMessageJSON(nil, &schemas.Sequenced{Message: m}, edge.FullForm)) + `}`)
}

func jsonFrame(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{"type":"error","code":"internal","detail":"could not encode a frame"}`)
	}
	return b
}

// Client → server frames.

// clientFrame is edge's ClientFrame: the ack frame's reader, which POST
// /v1/ack's shares, is there.
type clientFrame = edge.ClientFrame
