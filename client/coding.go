package client

import (
	"bytes"
	"errors"
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
// held. maxAnswerBytes bounds its bytes on the wire, read before any
// decoding, whatever the server says its length is (or when it says
// none: a chunked answer). maxZstdWindow is the window a zstd answer may
// ask for, the spec's 8 MiB that every decoder supports (the server's
// encoder uses less).
const (
	maxDecodedBytes = 64 << 20
	maxAnswerBytes  = 16 << 20
	maxZstdWindow   = 8 << 20
)

// errTooLarge is an answer over maxAnswerBytes on the wire or
// maxDecodedBytes decoded.
var errTooLarge = errors.New("answer too large")

// zstdDecoder is shared: DecodeAll may be called concurrently. It refuses
// a frame whose declared size is over maxDecodedBytes before allocating
// anything, and stops one that says no size when its output reaches it.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxDecodedBytes),
		zstd.WithDecoderMaxWindow(maxZstdWindow))
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
		// No guess of the size ahead: DecodeAll sizes dst from the frame's
		// declared size (bounded above) or grows it as it decodes.
		var dst []byte
		if buf != nil {
			dst = (*buf)[:0]
		}
		out, err := d.DecodeAll(raw, dst)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
			return nil, fmt.Errorf("zstd answer decodes to more than %d bytes: %w", maxDecodedBytes, errTooLarge)
		}
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
			return nil, fmt.Errorf("gzip answer decodes to more than %d bytes: %w", maxDecodedBytes, errTooLarge)
		}
		return out, nil
	}
	return nil, fmt.Errorf("answer in unknown content coding %q", coding)
}
