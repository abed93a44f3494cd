package redisstore

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/schemas"
)

// EncodeEntry renders a timeline entry: "SEQ:WRITE_MS:" + entryBody.
// The sequencing script builds the same prefix in Lua; this function exists
// for rebuilds and tests.
func EncodeEntry(seq uint64, writeMS int64, msg *schemas.Message) ([]byte, error) {
	body, err := entryBody(msg)
	if err != nil {
		return nil, fmt.Errorf("encode entry %d: %w", seq, err)
	}
	out := make([]byte, 0, len(body)+24)
	out = strconv.AppendUint(out, seq, 10)
	out = append(out, ':')
	out = strconv.AppendInt(out, writeMS, 10)
	out = append(out, ':')
	return append(out, body...), nil
}

// DecodeEntry parses a timeline entry of conversation conv (which the
// stored bytes leave out) and the given epoch.
func DecodeEntry(raw []byte, conv string, epoch uint64) (*schemas.Sequenced, error) {
	seqEnd := bytes.IndexByte(raw, ':')
	if seqEnd < 0 {
		return nil, fmt.Errorf("decode entry: no seq")
	}
	seq, err := strconv.ParseUint(string(raw[:seqEnd]), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("decode entry seq: %w", err)
	}
	rest := raw[seqEnd+1:]
	wtEnd := bytes.IndexByte(rest, ':')
	if wtEnd < 0 {
		return nil, fmt.Errorf("decode entry %d: no write time", seq)
	}
	wt, err := strconv.ParseInt(string(rest[:wtEnd]), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("decode entry %d write time: %w", seq, err)
	}
	var msg schemas.Message
	id, body, err := unpackEntryID(rest[wtEnd+1:])
	if err != nil {
		return nil, fmt.Errorf("decode entry %d id: %w", seq, err)
	}
	if err := proto.Unmarshal(body, &msg); err != nil {
		return nil, fmt.Errorf("decode entry %d message: %w", seq, err)
	}
	if msg.ContentType == "" && hasEmptyContentType(body) {
		msg.ContentType = entryDefaultContentType
	}
	if id != "" {
		msg.ClientMsgId = id
	}
	msg.ConvId = conv
	return &schemas.Sequenced{Message: &msg, Seq: seq, Epoch: epoch, WriteTimeMs: wt}, nil
}

// entryBody is the protobuf encoding of msg as a timeline stores it:
// client_msg_id first, whatever order the marshaller picks (the
// sequencing script reads the id there to tell a resend from another id
// with the same dedupe digest), and no conv_id (field 2): the key names
// the conversation, and an id repeated in every entry costs as much as a
// short message's sender and content type together. An id in one of the
// forms clients generate (a lowercase UUID, lowercase hex) is packed to
// its bytes (appendEntryID).
func entryBody(msg *schemas.Message) ([]byte, error) {
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(raw)+2)
	out = appendEntryID(out, msg.GetClientMsgId())
	for b := raw; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		switch {
		case num == entryFieldContentType && msg.GetContentType() == entryDefaultContentType:
			// the common content type in 2 bytes, not 12: an empty
			// content_type, which no marshaller writes (proto3 leaves an
			// empty string out), stands for it
			out = protowire.AppendTag(out, entryFieldContentType, protowire.BytesType)
			out = protowire.AppendString(out, "")
		case num != entryFieldClientMsgID && num != entryFieldConvID:
			out = append(out, b[:n+m]...)
		}
		b = b[n+m:]
	}
	return out, nil
}

// Field numbers of schemas.Message that entryBody places, shortens or
// leaves out.
const (
	entryFieldClientMsgID = 1
	entryFieldConvID      = 2
	entryFieldContentType = 10
)

// Field numbers of entries only (schemas.Message has neither): a
// client_msg_id packed to its bytes, from a lowercase UUID (8-4-4-4-12
// hex digits, as browsers make them) or from lowercase hex of even
// length (as the Go SDK makes them). The largest numbers whose tag takes
// 2 bytes: a process that does not know them skips them as unknown
// fields instead of failing on the entry.
const (
	entryFieldPackedUUID = 2047
	entryFieldPackedHex  = 2046
)

// appendEntryID appends the field an entry starts with: id packed to its
// bytes when its form allows (a UUID's 36 characters in 19 bytes, not
// 38), else client_msg_id as given. The form is decided by the id alone,
// so a resend packs the same way and the sequencing script compares the
// leading fields byte for byte.
func appendEntryID(out []byte, id string) []byte {
	if isLowerUUID(id) {
		out = protowire.AppendTag(out, entryFieldPackedUUID, protowire.BytesType)
		out = protowire.AppendVarint(out, 16)
		for _, part := range [...]string{id[0:8], id[9:13], id[14:18], id[19:23], id[24:36]} {
			out, _ = hex.AppendDecode(out, []byte(part)) // checked by isLowerUUID
		}
		return out
	}
	if isLowerHex(id) {
		out = protowire.AppendTag(out, entryFieldPackedHex, protowire.BytesType)
		out = protowire.AppendVarint(out, uint64(len(id)/2))
		out, _ = hex.AppendDecode(out, []byte(id)) // checked by isLowerHex
		return out
	}
	out = protowire.AppendTag(out, entryFieldClientMsgID, protowire.BytesType)
	return protowire.AppendString(out, id)
}

// unpackEntryID takes a packed id off the front of an entry body: the id
// ("" when the body starts with client_msg_id as given) and the rest.
func unpackEntryID(body []byte) (string, []byte, error) {
	num, typ, n := protowire.ConsumeTag(body)
	if n < 0 || typ != protowire.BytesType || (num != entryFieldPackedUUID && num != entryFieldPackedHex) {
		return "", body, nil
	}
	v, m := protowire.ConsumeBytes(body[n:])
	if m < 0 {
		return "", nil, protowire.ParseError(m)
	}
	rest := body[n+m:]
	if num == entryFieldPackedHex {
		return hex.EncodeToString(v), rest, nil
	}
	if len(v) != 16 {
		return "", nil, fmt.Errorf("packed UUID of %d bytes", len(v))
	}
	h := hex.EncodeToString(v)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32], rest, nil
}

// isLowerUUID reports whether id is a UUID in lowercase 8-4-4-4-12 form.
func isLowerUUID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isLowerHexDigit(c) {
				return false
			}
		}
	}
	return true
}

// isLowerHex reports whether id is lowercase hex digits of even length.
func isLowerHex(id string) bool {
	if id == "" || len(id)%2 != 0 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !isLowerHexDigit(id[i]) {
			return false
		}
	}
	return true
}

func isLowerHexDigit(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

// entryDefaultContentType is the content type an entry writes as an
// explicitly empty content_type field (see entryBody).
const entryDefaultContentType = "text/plain"

// hasEmptyContentType reports whether an entry body holds content_type as
// an explicitly empty field: entryDefaultContentType.
func hasEmptyContentType(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return false
		}
		if num == entryFieldContentType && typ == protowire.BytesType && m == 1 {
			return true
		}
		b = b[n+m:]
	}
	return false
}
