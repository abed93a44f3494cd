package live

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
)

// corkServer accepts one WebSocket through smallBuffers and hands its
// corkConn and the library's Conn to serve.
func corkServer(t *testing.T, serve func(ws *websocket.Conn, cork *corkConn)) *websocket.Conn {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := &smallBuffers{ResponseWriter: w, writeTimeout: 5 * time.Second}
		ws, err := websocket.Accept(bw, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		go func() {
			defer close(done)
			serve(ws, bw.cork)
		}()
	}))
	t.Cleanup(func() { <-done; srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func TestCorkedFramesOfEveryLengthArriveAsTheTextMessagesTheyWere(t *testing.T) {
	// Each length class of the header (7-bit, 16-bit, 64-bit), the edges
	// between them, and a batch larger than one syscall's buffer.
	sizes := []int{0, 1, 125, 126, 127, 300, 0xffff, 0x10000, maxCorkBytes - wsMaxHeader, maxCorkBytes, 200_000}
	var frames []queued
	for i, n := range sizes {
		frames = append(frames, queued{data: bytes.Repeat([]byte{byte('a' + i)}, n)})
	}
	c := corkServer(t, func(_ *websocket.Conn, cork *corkConn) {
		if err := cork.writeFrames(frames[:3]); err != nil {
			t.Errorf("write: %v", err)
		}
		if err := cork.writeFrames(frames[3:]); err != nil {
			t.Errorf("write: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, f := range frames {
		typ, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("frame %d (%d bytes): %v", i, sizes[i], err)
		}
		if typ != websocket.MessageText || !bytes.Equal(data, f.data) {
			t.Fatalf("frame %d: a %v message of %d bytes, want text of %d", i, typ, len(data), len(f.data))
		}
	}
}

func TestNoCorkedFrameFollowsTheCloseFrame(t *testing.T) {
	after := make(chan error, 1)
	c := corkServer(t, func(ws *websocket.Conn, cork *corkConn) {
		if err := cork.writeFrames([]queued{{data: []byte(`{"type":"ping"}`)}}); err != nil {
			t.Errorf("write before close: %v", err)
		}
		closed := make(chan struct{})
		go func() { _ = ws.Close(CloseSlowConsumer, "send queue full"); close(closed) }()
		// The close frame is out once the library's write passed the
		// cork (it then waits for the peer's answer).
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			cork.mu.Lock()
			closing := cork.closing
			cork.mu.Unlock()
			if closing {
				break
			}
		}
		after <- cork.writeFrames([]queued{{data: []byte(`{"type":"late"}`)}})
		<-closed
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, data, err := c.Read(ctx); err != nil || string(data) != `{"type":"ping"}` {
		t.Fatalf("first frame %q, %v", data, err)
	}
	_, data, err := c.Read(ctx)
	if websocket.CloseStatus(err) != CloseSlowConsumer {
		t.Fatalf("after the ping: %q, %v; want the close frame %d", data, err, CloseSlowConsumer)
	}
	if err := <-after; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a frame written after the close frame: %v, want net.ErrClosed", err)
	}
}

func TestTheLibrarysControlFramesPassTheCorkWhole(t *testing.T) {
	// The client's ping makes the library answer with a pong through
	// corkConn.Write between the connection's own batches.
	pinged := make(chan struct{})
	c := corkServer(t, func(ws *websocket.Conn, cork *corkConn) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		go func() { _, _, _ = ws.Read(ctx) }() // the library answers pings while it reads
		for i := 0; i < 50; i++ {
			if err := cork.writeFrames([]queued{{data: []byte(strings.Repeat("x", 100+i))}}); err != nil {
				t.Errorf("write: %v", err)
			}
		}
		<-pinged
		_ = ws.Close(websocket.StatusNormalClosure, "")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pingDone := make(chan error, 1)
	go func() { pingDone <- c.Ping(ctx) }()
	for i := 0; i < 50; i++ {
		_, data, err := c.Read(ctx)
		if err != nil || len(data) != 100+i {
			t.Fatalf("frame %d: %d bytes, %v", i, len(data), err)
		}
	}
	// Reading on lets the pong in (the client reads it with the frames).
	go func() { _, _, _ = c.Read(ctx) }()
	if err := <-pingDone; err != nil {
		t.Fatalf("the ping got no pong: %v", err)
	}
	close(pinged)
}

func TestAWriteToAClientThatStoppedReadingIsGivenTheWholeWriteTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	var blocked, gave time.Duration
	var werr error
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := &smallBuffers{ResponseWriter: w, writeTimeout: timeout}
		if _, err := websocket.Accept(bw, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled}); err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		go func() {
			defer close(done)
			cork := bw.cork
			frame := []queued{{data: bytes.Repeat([]byte("x"), 16<<10)}}
			// A first write arms the deadline; the next, blocked, starts
			// when three quarters of the timeout are left of it.
			if err := cork.writeFrames(frame); err != nil {
				t.Errorf("first write: %v", err)
				return
			}
			time.Sleep(timeout / 4)
			start := time.Now()
			for werr == nil && time.Since(start) < 10*time.Second {
				werr = cork.writeFrames(frame) // the client reads nothing: the socket fills, then the write waits
			}
			blocked = time.Since(start)
			cork.mu.Lock()
			gave = cork.deadline.Sub(start)
			cork.mu.Unlock()
		}()
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	<-done
	if !errors.Is(werr, os.ErrDeadlineExceeded) {
		t.Fatalf("the write to a client that reads nothing ended with %v, want the deadline", werr)
	}
	if gave < timeout || blocked < timeout {
		t.Fatalf("the write was given %v (it waited %v), want at least the timeout %v", gave, blocked, timeout)
	}
}

func TestFramesTheSocketTakesOnlyInPartArriveWholeAndInOrder(t *testing.T) {
	// The client reads nothing until the socket stops taking a batch
	// whole: the write that does not wait leaves a tail, which finish
	// writes once the client reads; a write meanwhile is not tried.
	const frames = 400
	var tails, waited int
	c := corkServer(t, func(_ *websocket.Conn, cork *corkConn) {
		if tc, ok := cork.Conn.(*net.TCPConn); ok {
			_ = tc.SetWriteBuffer(16 << 10) // fills after a few frames
		}
		for i := 0; i < frames; i++ {
			batch := []queued{{data: bytes.Repeat([]byte{byte('a' + i%26)}, 4000+i)}}
			tried, tail, err := cork.tryWriteFrames(batch)
			switch {
			case err != nil:
				t.Errorf("frame %d: %v", i, err)
				return
			case !tried:
				waited++
				if err := cork.writeFrames(batch); err != nil {
					t.Errorf("frame %d, written by a writer that waits: %v", i, err)
					return
				}
			case tail != nil:
				tails++
				if again, _, _ := cork.tryWriteFrames(batch[:1]); again {
					t.Errorf("frame %d: a write was tried while a tail held the socket", i)
				}
				if err := tail.finish(); err != nil {
					t.Errorf("frame %d: finishing its tail: %v", i, err)
					return
				}
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	time.Sleep(200 * time.Millisecond) // the socket's buffers fill meanwhile
	for i := 0; i < frames; i++ {
		_, data, err := c.Read(ctx)
		if err != nil || !bytes.Equal(data, bytes.Repeat([]byte{byte('a' + i%26)}, 4000+i)) {
			t.Fatalf("frame %d: %d bytes, %v", i, len(data), err)
		}
	}
	if tails == 0 {
		t.Fatalf("no write left a tail (%d waited): the test did not fill the socket", waited)
	}
}

// countingConn counts the writes that reach it.
type countingConn struct {
	net.Conn
	writes atomic.Int32
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

func TestFramesQueuedWhileTheHubHandsOutABatchGoOutInOneWrite(t *testing.T) {
	m, err := newLiveMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h := &liveHub{cfg: Config{MaxQueueBytes: 1 << 20, WriteTimeout: 5 * time.Second}, metrics: m, withPend: newPendingSet()}
	server, client := net.Pipe()
	defer client.Close()
	counted := &countingConn{Conn: server}
	c := newLiveConn(h, nil, "bob", "phone", "c1")
	c.cork = newCorkConn(counted, 5*time.Second)
	c.start()
	frames := [][]byte{[]byte(`{"type":"a"}`), []byte(`{"type":"bb"}`), []byte(`{"type":"ccc"}`)}
	want := 0
	for _, f := range frames {
		want += 2 + len(f) // a short frame's header is two bytes
	}
	got := make(chan []byte, 1)
	go func() {
		buf := make([]byte, want)
		_, _ = io.ReadFull(client, buf)
		got <- buf
	}()

	h.writes.begin()
	for _, f := range frames {
		c.send(f, false)
	}
	time.Sleep(20 * time.Millisecond)
	if n := counted.writes.Load(); n != 0 {
		t.Fatalf("%d writes while the hub defers them, want none", n)
	}
	h.writes.writeAll()
	select {
	case buf := <-got:
		var at int
		for i, f := range frames {
			if buf[at] != wsFinText || int(buf[at+1]) != len(f) || !bytes.Equal(buf[at+2:at+2+len(f)], f) {
				t.Fatalf("frame %d is not what was queued: % x", i, buf)
			}
			at += 2 + len(f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the deferred frames were never written")
	}
	if n := counted.writes.Load(); n != 1 {
		t.Fatalf("the three frames took %d writes, want one", n)
	}
}
