package redisstore

import (
	"bytes"
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
	body := rest[wtEnd+1:]
	if err := proto.Unmarshal(body, &msg); err != nil {
		return nil, fmt.Errorf("decode entry %d message: %w", seq, err)
	}
	if msg.ContentType == "" && hasEmptyContentType(body) {
		msg.ContentType = entryDefaultContentType
	}
	msg.ConvId = conv
	return &schemas.Sequenced{Message: &msg, Seq: seq, Epoch: epoch, WriteTimeMs: wt}, nil
}

// entryBody is the protobuf encoding of msg as a timeline stores it:
// client_msg_id (field 1) first, whatever order the marshaller picks (the
// sequencing script reads the id there to tell a resend from another id
// with the same dedupe digest), and no conv_id (field 2): the key names
// the conversation, and an id repeated in every entry costs as much as a
// short message's sender and content type together.
func entryBody(msg *schemas.Message) ([]byte, error) {
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(raw)+2)
	out = protowire.AppendTag(out, entryFieldClientMsgID, protowire.BytesType)
	out = protowire.AppendString(out, msg.GetClientMsgId())
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
