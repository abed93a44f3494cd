package client

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// An answer is read at most so far, whatever it says of its length:
// chunked (no length), one that says it is too long, and coded ones that
// decode past the bound are refused as too large, not held.
func TestAnAnswerOverTheBoundsIsRefusedAsTooLarge(t *testing.T) {
	zeros := make([]byte, maxDecodedBytes+1)
	declared, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	bomb := declared.EncodeAll(zeros, nil) // says its decoded size
	var streamed bytes.Buffer              // says none
	sw, err := zstd.NewWriter(&streamed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sw.Write(zeros); err != nil {
		t.Fatal(err)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	cases := []struct {
		name  string
		serve func(w http.ResponseWriter)
	}{
		{"chunked, past the wire bound", func(w http.ResponseWriter) {
			for range maxAnswerBytes/len(chunk) + 2 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}},
		{"a length over the wire bound", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", strconv.Itoa(maxAnswerBytes+1))
			for range maxAnswerBytes/len(chunk) + 1 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}},
		{"zstd that declares more than the decoded bound", func(w http.ResponseWriter) {
			w.Header().Set("Content-Encoding", "zstd")
			_, _ = w.Write(bomb)
		}},
		{"zstd that declares nothing and decodes past the bound", func(w http.ResponseWriter) {
			w.Header().Set("Content-Encoding", "zstd")
			_, _ = w.Write(streamed.Bytes())
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { tc.serve(w) }))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out map[string]any
			_, err := New(srv.URL, "t", nil).do(ctx, http.MethodGet, "/x", nil, &out)
			if !errors.Is(err, errTooLarge) {
				t.Fatalf("err %v, want too large", err)
			}
		})
	}
}

// Decoding a zstd answer allocates about what it decodes to, not four
// times its size on the wire before it starts.
func TestAZstdAnswerIsDecodedWithoutAllocatingAheadOfItsSize(t *testing.T) {
	raw := make([]byte, 4<<20)
	_, _ = rand.NewChaCha8([32]byte{3}).Read(raw) // incompressible: decoded ≈ wire
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	frame := enc.EncodeAll(raw, nil)
	if _, err := decodeBody("zstd", frame, nil); err != nil { // the decoder's own start
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out, err := decodeBody("zstd", frame, nil)
	runtime.ReadMemStats(&after)
	if err != nil || !bytes.Equal(out, raw) {
		t.Fatalf("decoded %d bytes (%v), want the %d encoded", len(out), err, len(raw))
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > uint64(2*len(raw)) {
		t.Fatalf("decoding %d bytes allocated %d, want under %d", len(raw), got, 2*len(raw))
	}
}
