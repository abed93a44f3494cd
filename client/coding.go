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

// decodeBody undoes the content coding of an answer.
func decodeBody(coding string, raw []byte) ([]byte, error) {
	switch coding {
	case "", "identity":
		return raw, nil
	case "zstd":
		d, err := zstdDecoder()
		if err != nil {
			return nil, fmt.Errorf("zstd decoder: %w", err)
		}
		out, err := d.DecodeAll(raw, make([]byte, 0, 4*len(raw)))
		if err != nil {
			return nil, fmt.Errorf("decode zstd answer: %w", err)
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
