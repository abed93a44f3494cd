package livecompat

import (
	"encoding/json"
	"fmt"
)

// Batch and the types under it are those of the previous release's live
// package, field for field and tag for tag; only their decode is used.
type Batch struct {
	Envelopes []Envelope `json:"e"`
}

// Envelope is the previous release's live.Envelope.
type Envelope struct {
	Kind     string    `json:"k"`
	Conv     string    `json:"conv,omitempty"`
	Targets  []Target  `json:"t,omitempty"`
	Large    bool      `json:"lg,omitempty"`
	Record   []byte    `json:"r,omitempty"`
	Receipt  *Receipt  `json:"rc,omitempty"`
	Rejected *Rejected `json:"rj,omitempty"`
	SentMS   int64     `json:"ms,omitempty"`
}

// Target is the previous release's live.Target.
type Target struct {
	User   string `json:"u"`
	Device string `json:"d"`
	Conn   string `json:"c"`
	Joined uint64 `json:"j,omitempty"`
}

// Receipt is the previous release's live.Receipt.
type Receipt struct {
	Conv             string `json:"conv_id"`
	Epoch            uint64 `json:"epoch"`
	Seq              uint64 `json:"seq"`
	State            string `json:"state,omitempty"`
	Pushed           int    `json:"pushed"`
	Delivered        int    `json:"delivered"`
	Read             int    `json:"read"`
	Members          int    `json:"members"`
	PeerDeliveredSeq uint64 `json:"peer_delivered_seq,omitempty"`
	PeerReadSeq      uint64 `json:"peer_read_seq,omitempty"`
}

// Rejected is the previous release's live.Rejected.
type Rejected struct {
	Conv        string `json:"conv_id"`
	ClientMsgID string `json:"client_msg_id"`
	Code        string `json:"code,omitempty"`
	Reason      string `json:"reason"`
	AtMS        int64  `json:"at_ms,omitempty"`
}

// Decode is the previous release's live.Decode: JSON and nothing else.
func Decode(data []byte) (Batch, error) {
	var b Batch
	if err := json.Unmarshal(data, &b); err != nil {
		return Batch{}, fmt.Errorf("decode live batch: %w", err)
	}
	return b, nil
}
