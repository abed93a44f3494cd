package api

import (
	"encoding/base64"
	"strconv"
	"unicode/utf8"

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

// appendMessageJSON writes what json.Marshal(toMessageJSON(sq)) writes,
// byte for byte, without reflection: a sync answer encodes hundreds of
// messages and reflection was most of its cost.
func appendMessageJSON(dst []byte, sq *schemas.Sequenced) []byte {
	m := sq.GetMessage()
	dst = append(dst, `{"conv_id":`...)
	dst = appendJSONString(dst, m.GetConvId())
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendUint(dst, sq.GetSeq(), 10)
	dst = append(dst, `,"epoch":`...)
	dst = strconv.AppendUint(dst, sq.GetEpoch(), 10)
	dst = append(dst, `,"write_time_ms":`...)
	dst = strconv.AppendInt(dst, sq.GetWriteTimeMs(), 10)
	dst = append(dst, `,"client_msg_id":`...)
	dst = appendJSONString(dst, m.GetClientMsgId())
	dst = append(dst, `,"conv_type":`...)
	dst = appendJSONString(dst, schemas.ConvTypeName(m.GetConvType()))
	dst = append(dst, `,"kind":`...)
	dst = appendJSONString(dst, schemas.KindName(m.GetKind()))
	dst = append(dst, `,"sender":`...)
	dst = appendJSONString(dst, m.GetSender())
	if rs := m.GetRecipients(); len(rs) > 0 {
		dst = appendJSONStrings(append(dst, `,"recipients":`...), rs)
	}
	if ms := m.GetMentions(); len(ms) > 0 {
		dst = appendJSONStrings(append(dst, `,"mentions":`...), ms)
	}
	if m.GetMentionAll() {
		dst = append(dst, `,"mention_all":true`...)
	}
	if ct := m.GetContentType(); ct != "" {
		dst = appendJSONString(append(dst, `,"content_type":`...), ct)
	}
	dst = append(dst, `,"body":`...)
	if body := m.GetBody(); body == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, body)
		dst = append(dst, '"')
	}
	if st := m.GetSendTimeMs(); st != 0 {
		dst = strconv.AppendInt(append(dst, `,"send_time_ms":`...), st, 10)
	}
	return append(dst, '}')
}

func appendJSONStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, s)
	}
	return append(dst, ']')
}

const jsonHex = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does by default: <, > and &
// escaped, invalid UTF-8 replaced by \ufffd, U+2028 and U+2029 escaped.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', jsonHex[b>>4], jsonHex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', jsonHex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
