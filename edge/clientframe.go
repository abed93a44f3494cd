package edge

import "github.com/offlinebox/offlinebox/wire"

// ClientFrame is a frame a device sends on the live channel, as the
// channel's strict decoder and ParseAckFrame read it.
type ClientFrame struct {
	Type string `json:"type"` // ack | typing | ping | pong | auth | reauth
	// ack; Reply asks for an acked frame (one comes anyway when the
	// device was evicted or evicted others)
	// (decoded with the frame: one strict pass, not one per item)
	Acks  []wire.AckItem `json:"acks,omitempty"`
	Reply bool           `json:"reply,omitempty"`
	// typing (and other QoS 0 records)
	ConvID      string `json:"conv_id,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	Body        []byte `json:"body,omitempty"`
	// auth, reauth
	Token string `json:"token,omitempty"`
}
