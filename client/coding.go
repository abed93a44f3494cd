package client

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// acceptEncoding is what the client asks answers in: zstd, else gzip. It
// decodes them itself (net/http would only undo gzip, and then hide the
// size on the wire).
const acceptEncoding = "zstd, gzip;q=0.9"

// maxDecodedBytes bounds an answer's decoded size: the API's largest
// budget is 1 MiB, so an answer that decodes to much more is refused, not
// held.
const maxDecodedBytes = 64 << 20

// zstdDecoder is shared: DecodeAll may be called concurrently.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxDecodedBytes))
})

// decodedBuffers holds the buffers zstd answers were decoded into, for
// answers whose decode keeps no part of them: a sync answer decodes to a
// few hundred KB, otherwise allocated and cleared for every answer.
var decodedBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBytes bounds a buffer kept for the next answer.
const maxPooledBytes = 4 << 20

func decodedBuffer() *[]byte { return decodedBuffers.Get().(*[]byte) }

// recycleDecoded gives back a buffer of decodedBuffer, once nothing
// refers to what was decoded into it.
func recycleDecoded(buf *[]byte) {
	if cap(*buf) <= maxPooledBytes {
		*buf = (*buf)[:0]
		decodedBuffers.Put(buf)
	}
}

// decodeBody undoes the content coding of an answer. A zstd answer is
// decoded into buf when one is given (which then holds the buffer used).
func decodeBody(coding string, raw []byte, buf *[]byte) ([]byte, error) {
	switch coding {
	case "", "identity":
		return raw, nil
	case "zstd":
		d, err := zstdDecoder()
		if err != nil {
			return nil, fmt.Errorf("zstd decoder: %w", err)
		}
		var dst []byte
		if buf != nil {
			dst = (*buf)[:0]
		}
		if cap(dst) < 4*len(raw) {
			dst = make([]byte, 0, 4*len(raw))
		}
		out, err := d.DecodeAll(raw, dst)
		if err != nil {
			return nil, fmt.Errorf("decode zstd answer: %w", err)
		}
		if buf != nil {
			*buf = out
		}
		return out, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("decode gzip answer: %w", err)
		}
		out, err := io.ReadAll(io.LimitReader(zr, maxDecodedBytes+1))
		if err != nil {
			return nil, fmt.Errorf("decode gzip answer: %w", err)
		}
		if len(out) > maxDecodedBytes {
			return nil, fmt.Errorf("gzip answer decodes to more than %d bytes", maxDecodedBytes)
		}
		return out, nil
	}
	return nil, fmt.Errorf("answer in unknown content coding %q", coding)
}
