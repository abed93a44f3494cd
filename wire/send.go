package wire

// SendRequest is the body of POST /v1/messages; the sender is the
// token's user. The SDK and the checker write it, the API reads it
// strictly (every key exactly one of these names).
type SendRequest struct {
	ClientMsgID string   `json:"client_msg_id"`
	ConvID      string   `json:"conv_id"`
	ConvType    string   `json:"conv_type"`
	Kind        string   `json:"kind,omitempty"`
	Recipients  []string `json:"recipients,omitempty"`
	Mentions    []string `json:"mentions,omitempty"`
	MentionAll  bool     `json:"mention_all,omitempty"`
	QoS         string   `json:"qos,omitempty"`
	ContentType string   `json:"content_type,omitempty"`
	Body        []byte   `json:"body,omitempty"`
	// Text is a text body as a string, as the answers give it: at most
	// one of Body and Text; with Text, an absent content type is
	// text/plain.
	Text       *string `json:"text,omitempty"`
	SendTimeMS int64   `json:"send_time_ms,omitempty"`
	// Role a member_join gives: member, admin or owner (owners only give
	// admin and owner). There is no authority field: what the API
	// produces always speaks for its sender.
	Role string `json:"role,omitempty"`
}
