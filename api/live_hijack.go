package api

import (
	"bufio"
	"errors"
	"net"
	"net/http"
)

// liveBufferBytes sizes a live connection's read and write buffers. The
// HTTP server's are 4 KiB each; frames are small and an idle connection
// holds its buffers for its whole life, so it gets 1 KiB ones (a larger
// frame is read and written through them in a few calls).
const liveBufferBytes = 1024

// smallBuffers hands the WebSocket library a hijacked connection with
// small buffers instead of the HTTP server's.
type smallBuffers struct {
	http.ResponseWriter
}

func (w smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the response writer cannot be hijacked")
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	r := brw.Reader
	if r.Buffered() == 0 {
		r = bufio.NewReaderSize(conn, liveBufferBytes)
	}
	// The server's writer is empty after a hijack (the 101 answer was
	// flushed), so nothing is lost by writing through another.
	return conn, bufio.NewReadWriter(r, bufio.NewWriterSize(conn, liveBufferBytes)), nil
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w smallBuffers) Unwrap() http.ResponseWriter { return w.ResponseWriter }
