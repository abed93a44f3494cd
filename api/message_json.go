package api

import (
	"encoding/json"

	"github.com/offlinebox/offlinebox/schemas"
)

// messageJSON is a sequenced message as every read answer shows it.
type messageJSON struct {
	ConvID      string   `json:"conv_id"`
	Seq         uint64   `json:"seq"`
	Epoch       uint64   `json:"epoch"`
	WriteTimeMS int64    `json:"write_time_ms"`
	ClientMsgID string   `json:"client_msg_id"`
	ConvType    string   `json:"conv_type"`
	Kind        string   `json:"kind"`
	Sender      string   `json:"sender"`
	Recipients  []string `json:"recipients,omitempty"`
	Mentions    []string `json:"mentions,omitempty"`
	MentionAll  bool     `json:"mention_all,omitempty"`
	ContentType string   `json:"content_type,omitempty"`
	// Body is base64, as the body is opaque bytes (it may be encrypted).
	Body       []byte `json:"body"`
	SendTimeMS int64  `json:"send_time_ms,omitempty"`
}

func toMessageJSON(sq *schemas.Sequenced) messageJSON {
	m := sq.GetMessage()
	return messageJSON{
		ConvID: m.GetConvId(), Seq: sq.GetSeq(), Epoch: sq.GetEpoch(), WriteTimeMS: sq.GetWriteTimeMs(),
		ClientMsgID: m.GetClientMsgId(), ConvType: schemas.ConvTypeName(m.GetConvType()), Kind: schemas.KindName(m.GetKind()),
		Sender: m.GetSender(), Recipients: m.GetRecipients(), Mentions: m.GetMentions(), MentionAll: m.GetMentionAll(),
		ContentType: m.GetContentType(), Body: m.GetBody(), SendTimeMS: m.GetSendTimeMs(),
	}
}

// encodeMessages renders messages as JSON, in order.
func encodeMessages(ms []*schemas.Sequenced) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(ms))
	for i, m := range ms {
		b, err := json.Marshal(toMessageJSON(m))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}
