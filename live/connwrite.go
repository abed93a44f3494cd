package live

import (
	"context"
	"errors"
	"os"

	"github.com/coder/websocket"
)

// A connection's writes: a writer takes what is queued (under c.mu) and
// writes it with c.mu released, so that a send never waits on the socket.
// c.writing, set under c.mu, says a writer runs; one at a time.

// writeNow writes what is queued on the caller's goroutine (c.writing
// was set for it) as long as the socket takes it without waiting; a
// writer goroutine takes over only for what has to wait.
func (c *liveConn) writeNow() {
	if c.cork == nil {
		go c.flush(nil, 0)
		return
	}
	for {
		batch, size, ok := c.nextBatch()
		if !ok {
			return
		}
		tried, tail, err := c.cork.tryWriteFrames(batch)
		switch {
		case !tried:
			go c.flush(batch, size)
			return
		case tail != nil:
			go func() {
				err := tail.finish()
				c.wrote(size)
				if err != nil {
					c.writeFailed(err)
					return
				}
				c.flush(nil, 0)
			}()
			return
		}
		c.wrote(size)
		if err != nil {
			c.writeFailed(err)
			return
		}
	}
}

// nextBatch takes the frames to write next; false (and the writer's turn
// ends) when none is left.
func (c *liveConn) nextBatch() ([]queued, int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 || c.closed {
		c.writing = false
		c.queue = nil
		return nil, 0, false
	}
	batch, size := c.takeLocked()
	return batch, size, true
}

func (c *liveConn) wrote(size int) {
	c.mu.Lock()
	c.bytes -= size
	c.mu.Unlock()
}

func (c *liveConn) writeFailed(err error) {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		c.hub.metrics.slowCloses.Inc()
	}
	c.close(CloseSlowConsumer, "write failed or timed out")
}

// flush writes batch (when not nil), then queued frames until none is
// left, then ends. What is queued when it looks goes out in one write
// syscall (up to maxCorkBytes): under load a connection's frames arrive
// in bursts.
func (c *liveConn) flush(batch []queued, size int) {
	for {
		if batch == nil {
			var ok bool
			if batch, size, ok = c.nextBatch(); !ok {
				return
			}
		}
		err := c.write(batch)
		batch = nil
		c.wrote(size)
		if err != nil {
			c.writeFailed(err)
			return
		}
	}
}

// takeLocked takes the frames at the head of the queue that fit in one
// write (at least one).
func (c *liveConn) takeLocked() ([]queued, int) {
	n, size := 0, 0
	for n < len(c.queue) && (n == 0 || size+len(c.queue[n].data) <= maxCorkBytes) {
		size += len(c.queue[n].data)
		n++
	}
	batch := make([]queued, n)
	copy(batch, c.queue[:n])
	clear(c.queue[:n])
	c.queue = c.queue[n:]
	return batch, size
}

// write sends frames, in one syscall when the socket is corked (each
// syscall bounded by the socket's write deadline, so a frame needs no
// context of its own: the library arms a timer for each write whose
// context can end).
func (c *liveConn) write(batch []queued) error {
	if c.cork != nil {
		return c.cork.writeFrames(batch)
	}
	for _, q := range batch {
		ctx, cancel := context.WithTimeout(context.Background(), c.hub.cfg.WriteTimeout)
		err := c.ws.Write(ctx, websocket.MessageText, q.data)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}
