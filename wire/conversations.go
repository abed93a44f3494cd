package wire

// ConvList is one page of GET /v1/conversations, most recently active
// first.
type ConvList struct {
	Conversations []ConvItem `json:"conversations"`
	// Next is the cursor of the following page; empty on the last page.
	Next string `json:"next,omitempty"`
}

// ConvItem is one conversation of the list, read from the user's inbox
// index alone.
type ConvItem struct {
	ConvID       string   `json:"conv_id"`
	Kind         string   `json:"kind"`
	Large        bool     `json:"large"`
	Unread       uint64   `json:"unread"`
	LastSeq      uint64   `json:"last_seq"`
	ReadSeq      uint64   `json:"read_seq"`
	LastActiveMS int64    `json:"last_active_ms"`
	Preview      *Preview `json:"preview"`
	Mentions     int      `json:"mentions"`
	AckedSeq     uint64   `json:"acked_seq"`
	// Left: the user left this group; what was sent while they were a
	// member stays readable.
	Left bool `json:"left"`
	// Direct conversations: the peer's delivered and read seq (what of
	// the user's messages the peer stored and read).
	PeerDeliveredSeq *uint64 `json:"peer_delivered_seq,omitempty"`
	PeerReadSeq      *uint64 `json:"peer_read_seq,omitempty"`
}
