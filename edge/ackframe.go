package edge

import (
	"math"

	"github.com/offlinebox/offlinebox/wire"
)

// ParseAckFrame reads the ack frame every live device sends about once a
// second, {"type":"ack","acks":[{"conv_id":"…","seq":N,"epoch":N}],"reply":B}
// (keys in any order, each item's fields optional as for the API's strict
// decodeJSON), without reflection. It accepts only what decodeJSON accepts and reads
// it the same; anything else (escapes, other keys, a key given twice,
// numbers that are not plain) reports false and the frame goes through
// decodeJSON, which decides and names the field at fault.
func ParseAckFrame(data []byte) (ClientFrame, bool) {
	p := ackParser{data: data}
	var f ClientFrame
	var seenType, seenAcks, seenReply bool
	if !p.byte('{') {
		return f, false
	}
	for first := true; ; first = false {
		if p.byte('}') {
			break
		}
		if !first && !p.byte(',') {
			return f, false
		}
		key, ok := p.str()
		if !ok || !p.byte(':') {
			return f, false
		}
		switch key {
		case "type":
			if seenType {
				return f, false
			}
			seenType = true
			if f.Type, ok = p.str(); !ok || f.Type != "ack" {
				return f, false
			}
		case "acks":
			if seenAcks {
				return f, false
			}
			seenAcks = true
			if f.Acks, ok = p.items(); !ok {
				return f, false
			}
		case "reply":
			if seenReply {
				return f, false
			}
			seenReply = true
			if f.Reply, ok = p.boolean(); !ok {
				return f, false
			}
		default:
			return f, false
		}
	}
	p.space()
	return f, seenType && p.pos == len(p.data)
}

type ackParser struct {
	data []byte
	pos  int
}

func (p *ackParser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// byte consumes c (after white space) if it is next.
func (p *ackParser) byte(c byte) bool {
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes.
func (p *ackParser) str() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.pos
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			s := string(p.data[start:p.pos])
			p.pos++
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return "", false
		}
		p.pos++
	}
	return "", false
}

// uint reads a non-negative integer as JSON writes it (no sign, no
// leading zero, no fraction or exponent) that fits in a uint64.
func (p *ackParser) uint() (uint64, bool) {
	p.space()
	start := p.pos
	var v uint64
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		d := uint64(p.data[p.pos] - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
		p.pos++
	}
	n := p.pos - start
	if n == 0 || (n > 1 && p.data[start] == '0') {
		return 0, false
	}
	if p.pos < len(p.data) {
		switch p.data[p.pos] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	return v, true
}

func (p *ackParser) boolean() (bool, bool) {
	p.space()
	rest := p.data[p.pos:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		p.pos += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		p.pos += 5
		return false, true
	}
	return false, false
}

// items reads the acks array (null and a missing array are left to
// decodeJSON).
func (p *ackParser) items() ([]wire.AckItem, bool) {
	if !p.byte('[') {
		return nil, false
	}
	out := make([]wire.AckItem, 0, 4)
	for first := true; ; first = false {
		if p.byte(']') {
			return out, true
		}
		if !first && !p.byte(',') {
			return nil, false
		}
		it, ok := p.item()
		if !ok {
			return nil, false
		}
		out = append(out, it)
	}
}

func (p *ackParser) item() (wire.AckItem, bool) {
	var it wire.AckItem
	var seenConv, seenSeq, seenEpoch, ok bool
	if !p.byte('{') {
		return it, false
	}
	for first := true; ; first = false {
		if p.byte('}') {
			return it, true
		}
		if !first && !p.byte(',') {
			return it, false
		}
		key, kok := p.str()
		if !kok || !p.byte(':') {
			return it, false
		}
		switch {
		case key == "conv_id" && !seenConv:
			seenConv = true
			it.ConvID, ok = p.str()
		case key == "seq" && !seenSeq:
			seenSeq = true
			it.Seq, ok = p.uint()
		case key == "epoch" && !seenEpoch:
			seenEpoch = true
			it.Epoch, ok = p.uint()
		default:
			return it, false
		}
		if !ok {
			return it, false
		}
	}
}
