package edge

import (
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/offlinebox/offlinebox/schemas"
)

// MessageJSON is a sequenced message as every read answer shows it, in
// its full form (mentions, history, the live channel). Inside a
// conversation slice (a sync answer's conversations, a page of messages)
// the slice form leaves out what every message of the slice shares and the
// slice says once: conv_id, epoch and conv_type.
type MessageJSON struct {
	ConvID      string   `json:"conv_id,omitempty"`
	Seq         uint64   `json:"seq"`
	Epoch       uint64   `json:"epoch,omitempty"`
	WriteTimeMS int64    `json:"write_time_ms"`
	ClientMsgID string   `json:"client_msg_id"`
	ConvType    string   `json:"conv_type,omitempty"`
	Kind        string   `json:"kind"`
	Sender      string   `json:"sender"`
	Recipients  []string `json:"recipients,omitempty"`
	Mentions    []string `json:"mentions,omitempty"`
	MentionAll  bool     `json:"mention_all,omitempty"`
	ContentType string   `json:"content_type,omitempty"`
	// Text is the body of a text message (content_type text/..., valid
	// UTF-8) as a string; Body is every other body, base64, as it is
	// opaque bytes. A message has one of the two. With Text, an absent
	// ContentType means text/plain, the type of most messages.
	Text       *string `json:"text,omitempty"`
	Body       []byte  `json:"body,omitempty"`
	SendTimeMS int64   `json:"send_time_ms,omitempty"`
}

// MessageForm says which fields a message's JSON carries.
type MessageForm int

const (
	FullForm  MessageForm = iota // every field
	SliceForm                    // without conv_id, epoch, conv_type: the slice has them
)

// TextPlain is the content type a text body without one has.
const TextPlain = "text/plain"

// bodyText is the body as the text field carries it: a text content type
// and valid UTF-8 (anything else would not survive as a JSON string).
func bodyText(m *schemas.Message) (string, bool) {
	ct := m.GetContentType()
	if len(ct) < 5 || !strings.EqualFold(ct[:5], "text/") || m.GetBody() == nil || !utf8.Valid(m.GetBody()) {
		return "", false
	}
	return string(m.GetBody()), true
}

// ToMessageJSON is sq in form as a struct, which encoding/json writes as
// AppendMessageJSON does.
func ToMessageJSON(sq *schemas.Sequenced, form MessageForm) MessageJSON {
	m := sq.GetMessage()
	out := MessageJSON{
		Seq: sq.GetSeq(), WriteTimeMS: sq.GetWriteTimeMs(), ClientMsgID: m.GetClientMsgId(), Kind: schemas.KindName(m.GetKind()),
		Sender: m.GetSender(), Recipients: m.GetRecipients(), Mentions: m.GetMentions(), MentionAll: m.GetMentionAll(),
		ContentType: m.GetContentType(), Body: m.GetBody(), SendTimeMS: m.GetSendTimeMs(),
	}
	if form == FullForm {
		out.ConvID, out.Epoch, out.ConvType = m.GetConvId(), sq.GetEpoch(), schemas.ConvTypeName(m.GetConvType())
	}
	if t, ok := bodyText(m); ok {
		out.Text, out.Body = &t, nil
		if out.ContentType == TextPlain {
			out.ContentType = ""
		}
	}
	return out
}

// AppendMessageJSON writes what json.Marshal(ToMessageJSON(sq, form))
// writes, byte for byte, without reflection: a sync answer encodes
// hundreds of messages and reflection was most of its cost.
func AppendMessageJSON(dst []byte, sq *schemas.Sequenced, form MessageForm) []byte {
	m := sq.GetMessage()
	dst = append(dst, '{')
	if c := m.GetConvId(); form == FullForm && c != "" {
		dst = append(dst, `"conv_id":`...)
		dst = AppendJSONString(dst, c)
		dst = append(dst, ',')
	}
	dst = append(dst, `"seq":`...)
	dst = strconv.AppendUint(dst, sq.GetSeq(), 10)
	if form == FullForm && sq.GetEpoch() != 0 { // 0: an ephemeral message, never stored
		dst = append(dst, `,"epoch":`...)
		dst = strconv.AppendUint(dst, sq.GetEpoch(), 10)
	}
	dst = append(dst, `,"write_time_ms":`...)
	dst = strconv.AppendInt(dst, sq.GetWriteTimeMs(), 10)
	dst = append(dst, `,"client_msg_id":`...)
	dst = AppendJSONString(dst, m.GetClientMsgId())
	if form == FullForm {
		dst = append(dst, `,"conv_type":`...)
		dst = AppendJSONString(dst, schemas.ConvTypeName(m.GetConvType()))
	}
	dst = append(dst, `,"kind":`...)
	dst = AppendJSONString(dst, schemas.KindName(m.GetKind()))
	dst = append(dst, `,"sender":`...)
	dst = AppendJSONString(dst, m.GetSender())
	if rs := m.GetRecipients(); len(rs) > 0 {
		dst = appendJSONStrings(append(dst, `,"recipients":`...), rs)
	}
	if ms := m.GetMentions(); len(ms) > 0 {
		dst = appendJSONStrings(append(dst, `,"mentions":`...), ms)
	}
	if m.GetMentionAll() {
		dst = append(dst, `,"mention_all":true`...)
	}
	t, isText := bodyText(m)
	if ct := m.GetContentType(); ct != "" && (!isText || ct != TextPlain) {
		dst = AppendJSONString(append(dst, `,"content_type":`...), ct)
	}
	if isText {
		dst = AppendJSONString(append(dst, `,"text":`...), t)
	} else if body := m.GetBody(); len(body) > 0 {
		dst = append(dst, `,"body":"`...)
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
		dst = AppendJSONString(dst, s)
	}
	return append(dst, ']')
}

const jsonHex = "0123456789abcdef"

// AppendJSONString quotes s as encoding/json does by default: <, > and &
// escaped, invalid UTF-8 replaced by \ufffd, U+2028 and U+2029 escaped.
func AppendJSONString(dst []byte, s string) []byte {
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
