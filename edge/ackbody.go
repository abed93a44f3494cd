package edge

import "github.com/offlinebox/offlinebox/wire"

// ParseAckBody reads the body of POST /v1/ack as the Go and web clients
// write it, {"device_id":"…","acks":[{"conv_id":"…","seq":N,"epoch":N}]}
// (keys in any order, device_id and each item's fields optional as for
// decodeJSON), without reflection: a reconnecting device acks every
// conversation it synced, and decoding each item through encoding/json
// was a twentieth of what the API spent on a reconnect. It takes only
// what decodeJSON takes and reads it the same (the ack frame's reader,
// ackframe.go); anything else (escapes, other keys, a key given
// twice, a null or missing acks) reports false and the body goes through
// decodeJSON, which decides and names the field at fault.
func ParseAckBody(data []byte) (device string, items []wire.AckItem, ok bool) {
	var p ackParser
	p.Reset(data)
	var seenDevice, seenAcks bool
	if !p.Consume('{') {
		return "", nil, false
	}
	for first := true; ; first = false {
		if p.Consume('}') {
			break
		}
		if !first && !p.Consume(',') {
			return "", nil, false
		}
		key, kok := p.str()
		if !kok || !p.Consume(':') {
			return "", nil, false
		}
		switch {
		case key == "device_id" && !seenDevice:
			seenDevice = true
			if device, ok = p.str(); !ok {
				return "", nil, false
			}
		case key == "acks" && !seenAcks:
			seenAcks = true
			if items, ok = p.items(); !ok {
				return "", nil, false
			}
		default:
			return "", nil, false
		}
	}
	if !seenAcks || p.End() != nil {
		return "", nil, false
	}
	return device, items, true
}
