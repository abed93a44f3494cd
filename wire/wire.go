package wire

// Preview is the last message of a conversation as the list shows it.
type Preview struct {
	Seq    uint64 `json:"seq"`
	Sender string `json:"sender"`
	TS     int64  `json:"ts"`
	Text   string `json:"text"`
}

// Rejection is a message the pipeline refused for good (GET
// /v1/rejections, or the live channel's rejected frame): it never gets a
// seq.
type Rejection struct {
	ConvID      string `json:"conv_id"`
	ClientMsgID string `json:"client_msg_id"`
	// Code is why, from the server's small public vocabulary; Reason is
	// its one sentence, for a person.
	Code   string `json:"code"`
	Reason string `json:"reason"`
	AtMS   int64  `json:"at_ms"`
}

// Members answers GET /v1/conversations/{conv}/members.
type Members struct {
	ConvID  string   `json:"conv_id"`
	Count   int      `json:"count"`
	Members []string `json:"members"`
	// Truncated says Members holds the first names only.
	Truncated bool `json:"truncated"`
}

// SendAnswer is the 202 answer of POST /v1/messages.
type SendAnswer struct {
	ClientMsgID string `json:"client_msg_id"`
	ConvID      string `json:"conv_id"`
}
