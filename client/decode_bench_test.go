package client

import (
	"testing"
)

// BenchmarkDecodeServerAnswers decodes the answers the server's encoder
// wrote (testdata/server) and a live message frame with the reader, so
// that a change to the reader shows its cost on each shape.
func BenchmarkDecodeServerAnswers(b *testing.B) {
	decoders := map[string]func([]byte) error{
		"sync.json":          func(d []byte) error { var v SyncResponse; return v.decodeWire(d) },
		"page.json":          func(d []byte) error { var v Page; return v.decodeWire(d) },
		"conversations.json": func(d []byte) error { var v ConvList; return decodeConvList(&v, d) },
	}
	type input struct {
		name   string
		data   []byte
		decode func([]byte) error
	}
	var inputs []input
	for _, a := range serverAnswers() {
		inputs = append(inputs, input{a.name, a.data, decoders[a.name]})
	}
	frame := []byte(liveFrames()[0])
	inputs = append(inputs, input{"live message frame", frame, func(d []byte) error { _, err := decodeFrame(d); return err }})
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := in.decode(in.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
