package live

import (
	"encoding/json"
	"fmt"
)

// Envelope kinds.
const (
	// KindPush carries a stored message (Sequenced, protobuf) for Targets,
	// or, on a conversation's channel, for every member connection there.
	KindPush = "push"
	// KindEphemeral carries a QoS 0 record (Message, protobuf): pushed
	// once, never stored, never pushed again.
	KindEphemeral = "ephemeral"
	// KindReceipt tells senders' devices that what they sent was
	// delivered or read (Receipt).
	KindReceipt = "receipt"
	// KindRejected tells a sender that the pipeline refused a record
	// (Rejected).
	KindRejected = "rejected"
	// KindKick closes the named connections: a newer connection of the
	// same device opened on another node.
	KindKick = "kick"
	// KindListen makes the named connections listen to Conv's channel
	// (they joined it).
	KindListen = "listen"
)

// Target is one device connection on the node the envelope went to.
type Target struct {
	User   string `json:"u"`
	Device string `json:"d"`
	Conn   string `json:"c"`
	// Joined: the seq the user joined the envelope's conversation at; the
	// connection, listening from now on, is pushed nothing of the
	// conversation's channel up to it (a record replayed late).
	Joined uint64 `json:"j,omitempty"`
}

// Envelope is one thing to hand to connections of one node.
type Envelope struct {
	Kind string `json:"k"`
	Conv string `json:"conv,omitempty"`
	// Targets: the connections meant. Empty on a conversation's channel:
	// every connection there that listens to Conv.
	Targets []Target `json:"t,omitempty"`
	// Large: Conv is a large group. A targeted push of a conversation
	// (its membership changed) makes the connection listen to its channel.
	Large bool `json:"lg,omitempty"`
	// Record is the protobuf record (Sequenced for push, Message for
	// ephemeral).
	Record []byte `json:"r,omitempty"`
	// Receipt and Rejected are set on their kinds.
	Receipt  *Receipt  `json:"rc,omitempty"`
	Rejected *Rejected `json:"rj,omitempty"`
	// SentMS is when the push stage published it (latency metrics).
	SentMS int64 `json:"ms,omitempty"`
}

// Receipt is what the sender of a conversation's messages is shown of
// them: for Seq, the sender's newest message the change covers, how many
// of the other members it was pushed to (a live connection of theirs was
// written it), delivered to and read by, and the furthest state any got.
type Receipt struct {
	Conv   string `json:"conv_id"`
	Epoch  uint64 `json:"epoch"`
	Seq    uint64 `json:"seq"`
	State  string `json:"state,omitempty"` // stored, pushed, delivered or read
	Pushed int    `json:"pushed"`
	// Delivered and Read count members whose devices stored (acked) and
	// who read Seq.
	Delivered int `json:"delivered"`
	Read      int `json:"read"`
	Members   int `json:"members"`
	// Direct conversations: the peer's cursors (as Telegram's
	// read_outbox_max_id).
	PeerDeliveredSeq uint64 `json:"peer_delivered_seq,omitempty"`
	PeerReadSeq      uint64 `json:"peer_read_seq,omitempty"`
}

// Rejected names a record the pipeline refused, for its sender.
type Rejected struct {
	Conv        string `json:"conv_id"`
	ClientMsgID string `json:"client_msg_id"`
	// Code is the refusal's public code (schemas.RefusalCodes), Reason
	// its one sentence.
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason"`
	// AtMS is when it was refused (the dead letter's time, ms): what
	// GET /v1/rejections lists it by.
	AtMS int64 `json:"at_ms,omitempty"`
}

// Batch is what one publish carries.
type Batch struct {
	Envelopes []Envelope `json:"e"`
}

// Encode renders a batch in DefaultFormat, the form every reader reads.
// A publisher sends through a Bus (Bus.PublishBatch), which encodes in
// the format it was given.
func Encode(b Batch) ([]byte, error) {
	return DefaultFormat.Encode(b)
}

// encodeJSON is the form every release reads (FormatJSON).
func encodeJSON(b Batch) ([]byte, error) {
	data, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encode live batch: %w", err)
	}
	return data, nil
}

// Decode reads a batch off the wire, binary or (from a publisher not
// upgraded yet) JSON.
//
// Ownership: a binary batch's records are slices of data, not copies, so
// data must stay unchanged while they are used; the subscriber hands
// Decode a payload of its own (go-redis's message, copied into the
// slice), never a buffer it reuses. Strings are copies: the strings of one
// target, and those of one rejection, share one allocation, and the
// targets of all envelopes one array (each envelope's slice capped at its
// own), so keeping one of them keeps those alive, not data.
func Decode(data []byte) (Batch, error) {
	if len(data) > 0 && data[0] == '{' {
		var b Batch
		if err := json.Unmarshal(data, &b); err != nil {
			return Batch{}, fmt.Errorf("decode live batch (JSON): %w", err)
		}
		return b, nil
	}
	b, err := decodeBinary(data)
	if err != nil {
		return Batch{}, fmt.Errorf("decode live batch: %w", err)
	}
	return b, nil
}
