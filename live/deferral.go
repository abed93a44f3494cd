package live

import "sync"

// writeDeferral holds the writes of connections queued frames while the
// hub hands out what the bus brought: what came at once (or a catch-up
// releases) goes to a connection in one write syscall, not one per frame,
// at no cost in latency (the frames are all here). Frames queued
// meanwhile by other goroutines wait as well, for as long as the hub
// takes to hand out what it holds.
//
// mu guards deferring and deferred, and nothing else. It is taken by a
// connection that starts a write (liveConn.after, once its own mu is
// released) and by the hub's loop; no other lock is taken while it is
// held, and the deferred writes are made after it is released.
type writeDeferral struct {
	mu        sync.Mutex
	deferring bool
	deferred  []*liveConn
}

// begin makes the connections that are queued frames from now on wait
// for writeAll to write them.
func (w *writeDeferral) begin() {
	w.mu.Lock()
	w.deferring = true
	w.mu.Unlock()
}

// take takes c's write for writeAll; false when writes are not deferred
// (c writes now).
func (w *writeDeferral) take(c *liveConn) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.deferring {
		return false
	}
	w.deferred = append(w.deferred, c)
	return true
}

// writeAll ends the deferral and writes what the connections were queued
// meanwhile. Only the hub's loop defers writes, so nothing is added to
// the list while it writes them.
func (w *writeDeferral) writeAll() {
	w.mu.Lock()
	conns := w.deferred
	w.deferring = false
	w.mu.Unlock()
	for i, c := range conns {
		c.writeNow()
		conns[i] = nil
	}
	w.mu.Lock()
	w.deferred = conns[:0]
	if cap(conns) > maxKeptDeferred {
		w.deferred = nil
	}
	w.mu.Unlock()
}

// maxKeptDeferred bounds the list of deferred writes the hub keeps for the
// next drain (one the length of its connections is reused; a longer one,
// after a burst, is let go).
const maxKeptDeferred = 1 << 14
