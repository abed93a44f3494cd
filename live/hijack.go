package live

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// liveReadBufferBytes sizes a live connection's read buffer. The HTTP
// server's is 4 KiB; an idle connection holds its read buffer for its
// whole life and a client's frames (acks, pongs) are small, so it gets a
// 512-byte one (a larger frame is read through it in a few calls).
const liveReadBufferBytes = 512

// liveControlBufferBytes sizes the buffer the WebSocket library writes
// through. The connection writes its data frames itself (corkConn.
// writeFrames); the library writes only control frames (pong, close),
// at most 127 bytes, so that each reaches the socket whole, in one Write.
const liveControlBufferBytes = 256

// smallBuffers hands the WebSocket library a hijacked connection with
// small buffers instead of the HTTP server's, through a corkConn (set in
// cork once Accept hijacked it).
type smallBuffers struct {
	http.ResponseWriter
	writeTimeout time.Duration
	cork         *corkConn
}

func (w *smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the response writer cannot be hijacked")
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.cork = newCorkConn(conn, w.writeTimeout)
	r := brw.Reader
	if r.Buffered() == 0 {
		r = bufio.NewReaderSize(conn, liveReadBufferBytes)
	}
	// The server's writer is empty after a hijack (the 101 answer was
	// flushed), so nothing is lost by writing through another.
	return w.cork, bufio.NewReadWriter(r, bufio.NewWriterSize(w.cork, liveControlBufferBytes)), nil
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *smallBuffers) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// maxCorkBytes bounds what one syscall of a connection carries.
const maxCorkBytes = 32 << 10

// corkBuffers are the buffers of connections being flushed; an idle
// connection holds none.
var corkBuffers = sync.Pool{New: func() any { b := make([]byte, 0, maxCorkBytes); return &b }}

// corkConn is the socket under a live connection. The connection's data
// frames do not go through the library: writeFrames frames what the
// writer found queued (server frames are unmasked: a header and the
// bytes) into one buffer and sends it in one write syscall, so the bytes
// of a frame encoded once for every connection are copied once, into the
// socket's batch, with none of the library's per-frame locking. The
// library still writes its control frames (pong, close) through Write;
// the mutex keeps them whole between batches, and after a close frame no
// data frame follows.
//
// Every write is bounded by the socket's write deadline, kept between
// the timeout and half as much again ahead rather than set and cleared
// around each batch (two timer changes per batch).
type corkConn struct {
	net.Conn

	timeout time.Duration // bounds each write

	// raw writes without waiting (nil when the socket has no file
	// descriptor: every write then waits, on a writer goroutine).
	raw syscall.RawConn

	mu       sync.Mutex // held across writes to the socket: frames never interleave
	closing  bool       // a close frame went out
	deadline time.Time  // the socket's write deadline
}

func newCorkConn(conn net.Conn, timeout time.Duration) *corkConn {
	return &corkConn{Conn: conn, timeout: timeout, raw: rawConnOf(conn)}
}

// Write is the library's: a control frame, whole (see
// liveControlBufferBytes), or the rare frame of a connection written
// without the cork.
func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.armLocked(); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(p)
	if len(p) > 0 && p[0]&0x0f == wsOpClose {
		c.closing = true
	}
	return n, err
}

// armLocked makes sure the socket's write deadline is at least the
// timeout ahead: when it is not, it moves it to half as much again
// ahead, so that a connection writing often moves it once every half
// timeout, not on every write, and a write is never given less than the
// timeout. c.mu is held.
func (c *corkConn) armLocked() error {
	now := time.Now()
	if c.deadline.Sub(now) >= c.timeout {
		return nil
	}
	c.deadline = now.Add(c.timeout + c.timeout/2)
	return c.Conn.SetWriteDeadline(c.deadline)
}

// WebSocket framing of what the server sends (RFC 6455 section 5.2).
const (
	wsFinText = 0x81 // FIN, opcode text
	wsOpClose = 0x8
	// wsMaxHeader is a header with a 64-bit length (a server's frames
	// carry no mask).
	wsMaxHeader = 10
)

// appendFrameHeader appends the header of an unmasked final text frame
// of n bytes.
func appendFrameHeader(b []byte, n int) []byte {
	switch {
	case n <= 125:
		return append(b, wsFinText, byte(n))
	case n <= 0xffff:
		return append(b, wsFinText, 126, byte(n>>8), byte(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, wsFinText, 127), uint64(n))
	}
}

// writeFrames sends frames as text messages, as many as fit in
// maxCorkBytes a syscall.
func (c *corkConn) writeFrames(frames []queued) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return net.ErrClosed
	}
	if err := c.armLocked(); err != nil {
		return err
	}
	bp := corkBuffers.Get().(*[]byte)
	defer func() { *bp = (*bp)[:0]; corkBuffers.Put(bp) }()
	buf := (*bp)[:0]
	for _, q := range frames {
		if len(buf) > 0 && len(buf)+wsMaxHeader+len(q.data) > maxCorkBytes {
			if _, err := c.Conn.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
		if wsMaxHeader+len(q.data) > maxCorkBytes {
			// larger than a batch: its header, then its bytes as they are
			bufs := net.Buffers{appendFrameHeader(buf, len(q.data)), q.data}
			if _, err := bufs.WriteTo(c.Conn); err != nil {
				return err
			}
			buf = buf[:0]
			continue
		}
		buf = append(appendFrameHeader(buf, len(q.data)), q.data...)
	}
	if len(buf) > 0 {
		if _, err := c.Conn.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// unsent is the tail of a batch the socket did not take at once. It holds
// the socket (c.mu) and the batch's buffer until finish writes it, so no
// other frame can come between.
type unsent struct {
	c    *corkConn
	bp   *[]byte
	rest []byte
}

// finish writes the tail, waiting as long as the write deadline allows,
// and lets the socket go.
func (u *unsent) finish() error {
	defer u.c.mu.Unlock()
	defer func() { *u.bp = (*u.bp)[:0]; corkBuffers.Put(u.bp) }()
	if err := u.c.armLocked(); err != nil {
		return err
	}
	_, err := u.c.Conn.Write(u.rest)
	return err
}

// tryWriteFrames writes frames in one syscall that does not wait, on the
// caller's goroutine: a connection's frames go out from where they were
// queued, with no writer goroutine to start and schedule (one per
// delivery otherwise, as a live connection is rarely sent two frames
// close together). tried is false when nothing was written and frames
// are for a writer that may wait (the socket is busy with another
// write, or the frames do not fit one batch); tail is what the socket
// did not take, for a writer to finish.
func (c *corkConn) tryWriteFrames(frames []queued) (tried bool, tail *unsent, err error) {
	if c.raw == nil || !c.mu.TryLock() {
		return false, nil, nil
	}
	if c.closing {
		c.mu.Unlock()
		return true, nil, net.ErrClosed
	}
	size := 0
	for _, q := range frames {
		size += wsMaxHeader + len(q.data)
	}
	if size > maxCorkBytes {
		c.mu.Unlock()
		return false, nil, nil
	}
	bp := corkBuffers.Get().(*[]byte)
	buf := (*bp)[:0]
	for _, q := range frames {
		buf = append(appendFrameHeader(buf, len(q.data)), q.data...)
	}
	n, werr := writeNoWait(c.raw, buf)
	switch {
	case werr != nil:
		*bp = buf[:0]
		corkBuffers.Put(bp)
		c.mu.Unlock()
		return true, nil, werr
	}
	if n >= len(buf) {
		*bp = buf[:0]
		corkBuffers.Put(bp)
		c.mu.Unlock()
		return true, nil, nil
	}
	*bp = buf
	return true, &unsent{c: c, bp: bp, rest: buf[max(n, 0):]}, nil
}
