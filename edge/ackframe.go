package edge

import (
	"github.com/offlinebox/offlinebox/jsontok"
	"github.com/offlinebox/offlinebox/wire"
)

// ParseAckFrame reads the ack frame every live device sends about once a
// second, {"type":"ack","acks":[{"conv_id":"…","seq":N,"epoch":N}],"reply":B}
// (keys in any order, each item's fields optional as for the API's strict
// decodeJSON), without reflection, through the wire's tokenizer. It
// accepts only what decodeJSON accepts and reads it the same; anything
// else (escapes, other keys, a key given twice, numbers that are not
// plain) reports false and the frame goes through decodeJSON, which
// decides and names the field at fault.
func ParseAckFrame(data []byte) (ClientFrame, bool) {
	var p ackParser
	p.Reset(data)
	var f ClientFrame
	var seenType, seenAcks, seenReply bool
	if !p.Consume('{') {
		return f, false
	}
	for first := true; !p.Consume('}'); first = false {
		if !first && !p.Consume(',') {
			return f, false
		}
		key, ok := p.str()
		if !ok || !p.Consume(':') {
			return f, false
		}
		switch {
		case key == "type" && !seenType:
			seenType = true
			if f.Type, ok = p.str(); !ok || f.Type != "ack" {
				return f, false
			}
		case key == "acks" && !seenAcks:
			seenAcks = true
			if f.Acks, ok = p.items(); !ok {
				return f, false
			}
		case key == "reply" && !seenReply:
			seenReply = true
			if f.Reply, ok = p.boolean(); !ok {
				return f, false
			}
		default:
			return f, false
		}
	}
	return f, seenType && p.End() == nil
}

// ackParser is the wire's tokenizer with the few reads a fixed-shape
// fast path needs: each is false for anything it does not take.
type ackParser struct{ jsontok.Tokenizer }

// str reads a string of printable ASCII without escapes.
func (p *ackParser) str() (string, bool) {
	s, ok := p.PlainString()
	return string(s), ok
}

// uint reads a non-negative integer as JSON writes it (no sign, no
// leading zero, no fraction or exponent) that fits in a uint64.
func (p *ackParser) uint() (uint64, bool) {
	if c := p.Peek(); c < '0' || c > '9' {
		return 0, false
	}
	v, ok := jsontok.Uint(p.Number())
	return v, ok && p.Err() == nil
}

func (p *ackParser) boolean() (bool, bool) {
	switch p.Peek() {
	case 't':
		p.Literal("true")
		return true, p.Err() == nil
	case 'f':
		p.Literal("false")
		return false, p.Err() == nil
	}
	return false, false
}

// items reads the acks array (null and a missing array are left to
// decodeJSON).
func (p *ackParser) items() ([]wire.AckItem, bool) {
	if !p.Consume('[') {
		return nil, false
	}
	out := make([]wire.AckItem, 0, 4)
	for first := true; !p.Consume(']'); first = false {
		if !first && !p.Consume(',') {
			return nil, false
		}
		it, ok := p.item()
		if !ok {
			return nil, false
		}
		out = append(out, it)
	}
	return out, p.Err() == nil
}

func (p *ackParser) item() (wire.AckItem, bool) {
	var it wire.AckItem
	var seenConv, seenSeq, seenEpoch, ok bool
	if !p.Consume('{') {
		return it, false
	}
	for first := true; !p.Consume('}'); first = false {
		if !first && !p.Consume(',') {
			return it, false
		}
		key, kok := p.str()
		if !kok || !p.Consume(':') {
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
	return it, p.Err() == nil
}
