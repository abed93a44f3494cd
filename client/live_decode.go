package client

import (
	"encoding/json"
	"errors"
)

// decodeFrame reads one frame of the live channel. Message and ephemeral
// frames, nearly every frame a device gets, are read by the reader of
// jsonread.go: through encoding/json a message was scanned three times
// (the frame, then the message's own UnmarshalJSON, then its wire form),
// and a burst of them (a large group's message reaching every device at
// once) was a device's CPU. Every other frame, and any shape the reader
// leaves to encoding/json, is decoded by encoding/json, which gives the
// values it always gave.
func decodeFrame(data []byte) (Frame, error) {
	var f Frame
	rd := newJSONReader(data)
	rd.liveFrame(&f)
	err := rd.End()
	rd.release()
	if errors.Is(err, errReflectOnly) {
		f = Frame{}
		err = json.Unmarshal(data, &f)
	}
	return f, err
}

// liveFrame reads {"type":…,"attempt":N,"message":{…}}; any other key
// leaves the frame to encoding/json.
func (r *jsonReader) liveFrame(f *Frame) {
	r.object(nil, func(k []byte) int {
		switch string(k) {
		case "type":
			r.str(&f.Type)
			return 0
		case "attempt":
			r.int(&f.Attempt)
			return 1
		case "message":
			if r.Err() == nil && r.Peek() == 'n' {
				r.Literal("null")
				f.Message = nil
				return 2
			}
			m := new(Message)
			r.message(m)
			f.Message = m
			return 2
		}
		r.Fail(errReflectOnly) // so unknown, given no keys, skips nothing
		return -1
	})
}
