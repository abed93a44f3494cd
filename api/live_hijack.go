package api

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// liveBufferBytes sizes a live connection's read and write buffers. The
// HTTP server's are 4 KiB each; frames are small and an idle connection
// holds its buffers for its whole life, so it gets 1 KiB ones (a larger
// frame is read and written through them in a few calls).
const liveBufferBytes = 1024

// smallBuffers hands the WebSocket library a hijacked connection with
// small buffers instead of the HTTP server's, through a corkConn (set in
// cork once Accept hijacked it).
type smallBuffers struct {
	http.ResponseWriter
	cork *corkConn
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
	w.cork = &corkConn{Conn: conn}
	r := brw.Reader
	if r.Buffered() == 0 {
		r = bufio.NewReaderSize(conn, liveBufferBytes)
	}
	// The server's writer is empty after a hijack (the 101 answer was
	// flushed), so nothing is lost by writing through another.
	return w.cork, bufio.NewReadWriter(r, bufio.NewWriterSize(w.cork, liveBufferBytes)), nil
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *smallBuffers) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// maxCorkBytes bounds what one syscall of a connection carries.
const maxCorkBytes = 32 << 10

// corkBuffers are the buffers of connections being flushed; an idle
// connection holds none.
var corkBuffers = sync.Pool{New: func() any { b := make([]byte, 0, maxCorkBytes); return &b }}

// corkConn gathers the frames a connection's writer sends in one go
// (everything queued when it runs, up to maxCorkBytes) into one write
// syscall instead of one per frame. The library writes each frame with a
// flush of its buffer; while corked, those writes land in the buffer and
// uncork sends them together, within the write timeout.
type corkConn struct {
	net.Conn

	mu     sync.Mutex // held across writes to the socket: frames never interleave
	corked bool
	buf    *[]byte
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked {
		if c.buf == nil {
			c.buf = corkBuffers.Get().(*[]byte)
		}
		if len(*c.buf)+len(p) <= maxCorkBytes {
			*c.buf = append(*c.buf, p...)
			return len(p), nil
		}
		if err := c.sendLocked(); err != nil {
			return 0, err
		}
	}
	return c.Conn.Write(p)
}

// cork starts gathering writes; until uncork, every write to the socket
// (what overflows the buffer, or a frame larger than it) ends by the
// deadline timeout from now.
func (c *corkConn) cork(timeout time.Duration) {
	c.mu.Lock()
	c.corked = true
	_ = c.Conn.SetWriteDeadline(time.Now().Add(timeout))
	c.mu.Unlock()
}

// uncork sends what was gathered in one write, within the deadline cork
// set, and lets writes through again.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	var err error
	if c.buf != nil {
		err = c.sendLocked()
		(*c.buf) = (*c.buf)[:0]
		corkBuffers.Put(c.buf)
		c.buf = nil
	}
	_ = c.Conn.SetWriteDeadline(time.Time{})
	return err
}

func (c *corkConn) sendLocked() error {
	if c.buf == nil || len(*c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(*c.buf)
	*c.buf = (*c.buf)[:0]
	return err
}
