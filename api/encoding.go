package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Content codings of answers, in the server's order of preference.
const (
	codingZstd     = "zstd"
	codingGzip     = "gzip"
	codingIdentity = "identity"
)

// minCodedBytes: a smaller answer goes as it is (unless the client refused
// identity): a frame's header and the CPU are not worth the few bytes.
const minCodedBytes = 1024

// coders compress answers. Both kinds of encoder are pooled and bounded:
// the zstd Encoder keeps at most its concurrency of encoders for EncodeAll
// (a call waits for one), and the gzip writers live in a channel of the
// same size.
type coders struct {
	zstd *zstd.Encoder
	gzip chan *gzip.Writer
}

func newCoders(n int) (*coders, error) {
	if n < 1 {
		n = runtime.GOMAXPROCS(0)
	}
	z, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(n))
	if err != nil {
		return nil, fmt.Errorf("zstd encoder: %w", err)
	}
	c := &coders{zstd: z, gzip: make(chan *gzip.Writer, n)}
	for range n {
		c.gzip <- nil // made on first use
	}
	return c, nil
}

// encode compresses data with coding; ok is false when the context ended
// while waiting for an encoder.
func (c *coders) encode(ctx context.Context, coding string, data []byte) (_ []byte, ok bool) {
	switch coding {
	case codingZstd:
		return c.zstd.EncodeAll(data, make([]byte, 0, len(data)/3)), true
	case codingGzip:
		var w *gzip.Writer
		select {
		case w = <-c.gzip:
		case <-ctx.Done():
			return nil, false
		}
		defer func() {
			w.Reset(io.Discard) // the pool keeps no answer alive
			c.gzip <- w
		}()
		var buf bytes.Buffer
		buf.Grow(len(data) / 3)
		if w == nil {
			w, _ = gzip.NewWriterLevel(&buf, gzip.BestSpeed) // the level is valid
		} else {
			w.Reset(&buf)
		}
		_, _ = w.Write(data) // a bytes.Buffer does not fail
		_ = w.Close()
		return buf.Bytes(), true
	}
	return data, true
}

// acceptance is what an Accept-Encoding header allows, as q-values (0:
// refused). namedIdentity: the header gave identity a q of its own (by
// name or by "*").
type acceptance struct {
	zstd, gzip, identity float64
	namedIdentity        bool
}

// parseAcceptEncoding reads the header as RFC 9110 section 12.5.3 says: no
// header, identity only; a coding not named takes the q of "*" if given,
// else is refused, except identity, which is acceptable unless refused by
// name or by "*;q=0". A malformed q counts as 0.
func parseAcceptEncoding(h []string) acceptance {
	if len(h) == 0 {
		return acceptance{identity: 1}
	}
	q := map[string]float64{}
	for _, line := range h {
		for _, part := range strings.Split(line, ",") {
			name, params, _ := strings.Cut(part, ";")
			name = strings.ToLower(strings.TrimSpace(name))
			if name == "" {
				continue
			}
			q[name] = qValue(params)
		}
	}
	of := func(name string) (float64, bool) {
		if v, ok := q[name]; ok {
			return v, true
		}
		v, ok := q["*"]
		return v, ok
	}
	a := acceptance{identity: 1}
	a.zstd, _ = of(codingZstd)
	a.gzip, _ = of(codingGzip)
	if v, ok := of(codingIdentity); ok {
		a.identity, a.namedIdentity = v, true
	}
	return a
}

// qValue reads the q parameter of one Accept-Encoding entry (1 without).
func qValue(params string) float64 {
	for _, p := range strings.Split(params, ";") {
		k, val, found := strings.Cut(strings.TrimSpace(p), "=")
		if found && strings.EqualFold(strings.TrimSpace(k), "q") {
			f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err != nil || f < 0 || f > 1 {
				return 0
			}
			return f
		}
	}
	return 1
}

// choose picks the coding of an answer of n bytes: the acceptable coding
// of highest q (zstd on a tie), unless identity was given a higher q by
// name; identity when no coding is acceptable, and for a small answer
// when the client takes it. "" when nothing is acceptable.
func (a acceptance) choose(n int) string {
	if n < minCodedBytes && a.identity > 0 {
		return codingIdentity
	}
	best, bestQ := codingZstd, a.zstd
	if a.gzip > bestQ {
		best, bestQ = codingGzip, a.gzip
	}
	switch {
	case bestQ > 0 && !(a.namedIdentity && a.identity > bestQ):
		return best
	case a.identity > 0:
		return codingIdentity
	}
	return ""
}

// writeAnswer writes a JSON answer in the coding the request accepts
// (Vary: Accept-Encoding on every answer, whatever it chose), or 406 when
// it accepts none. It returns the status and the bytes on the wire.
func (s *Server) writeAnswer(w http.ResponseWriter, r *http.Request, status int, body any) (int, int) {
	if a, ok := body.(*codedAnswer); ok {
		if a.frames != nil {
			// Coded as it was assembled: only when zstd was chosen.
			w.Header().Set("Vary", "Accept-Encoding")
			w.Header().Set("Content-Encoding", codingZstd)
			s.metrics.coded.WithLabelValues(codingZstd).Add(float64(a.plainBytes))
			return writeFrames(w, status, a)
		}
		body = a.plain
	}
	data, status := encodeJSON(status, body)
	w.Header().Set("Vary", "Accept-Encoding")
	accepted := parseAcceptEncoding(r.Header.Values("Accept-Encoding"))
	coding := accepted.choose(len(data))
	if coding == "" {
		return s.writeError(w, &apiError{Status: http.StatusNotAcceptable, Code: "not_acceptable", Field: "Accept-Encoding",
			Msg: "accepts none of zstd, gzip, identity"})
	}
	if coding != codingIdentity {
		coded, ok := s.coders.encode(r.Context(), coding, data)
		if ok {
			s.metrics.coded.WithLabelValues(coding).Add(float64(len(data)))
			w.Header().Set("Content-Encoding", coding)
			return writeRaw(w, status, coded)
		}
		if accepted.identity == 0 {
			return s.writeError(w, &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Msg: "no encoder was free in time; retry later"})
		}
	}
	s.metrics.coded.WithLabelValues(codingIdentity).Add(float64(len(data)))
	return writeRaw(w, status, data)
}

// writeFrames writes an answer coded as it was assembled (its length said
// first, so that nothing is chunked). The frames are gathered into one
// buffer and written at once: written one by one, each small frame went
// through the server's 2 KiB and 4 KiB buffers, a write syscall every
// 4 KiB, where one write of the whole answer costs two.
func writeFrames(w http.ResponseWriter, status int, a *codedAnswer) (int, int) {
	bp := answerBuffers.Get().(*[]byte)
	buf := (*bp)[:0]
	for _, f := range a.frames {
		buf = append(buf, f...)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	status, n := writeRaw(w, status, buf)
	if cap(buf) <= maxPooledAnswerBytes {
		*bp = buf[:0]
		answerBuffers.Put(bp)
	}
	return status, n
}

// maxPooledAnswerBytes bounds the buffers answerBuffers keeps: the
// default answer budget with room to spare; a larger one is let go.
const maxPooledAnswerBytes = 256 << 10

// answerBuffers are the buffers writeFrames gathers an answer in.
var answerBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}
