package redisstore

import (
	"bytes"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/schemas"
)

// EncodeEntry renders a timeline entry: "SEQ:WRITE_MS:" + protobuf Message.
// The sequencing script builds the same prefix in Lua; this function exists
// for rebuilds and tests.
func EncodeEntry(seq uint64, writeMS int64, msg *schemas.Message) ([]byte, error) {
	body, err := proto.Marshal(msg)
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

// DecodeEntry parses a timeline entry of the given epoch.
func DecodeEntry(raw []byte, epoch uint64) (*schemas.Sequenced, error) {
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
	if err := proto.Unmarshal(rest[wtEnd+1:], &msg); err != nil {
		return nil, fmt.Errorf("decode entry %d message: %w", seq, err)
	}
	return &schemas.Sequenced{Message: &msg, Seq: seq, Epoch: epoch, WriteTimeMs: wt}, nil
}
