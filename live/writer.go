package live

import "time"

// writeDelay gathers the frames of several bus batches into one write per
// connection: the hub keeps writes deferred (writeDeferral) for up to
// Config.WriteDelay after the first batch that queued any, handing out
// every batch that comes meanwhile, then writes what each connection was
// queued in one buffered write (corkConn.writeFrames: several WebSocket
// frames, one message each, per syscall, up to maxCorkBytes), as
// centrifuge's writer does with WriteDelay. Under load a connection is
// queued frames from many batches a millisecond; each write syscall costs
// more than the frames it carries. The added latency is at most the delay;
// with no delay (negative WriteDelay) each batch's frames go out as soon as
// the batch is handed out. Queues stay bounded by MaxQueueBytes while
// frames wait.
//
// Only the hub's loop uses a writeDelay.
type writeDelay struct {
	h     *liveHub
	timer *time.Timer
	armed bool
}

func newWriteDelay(h *liveHub) *writeDelay {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &writeDelay{h: h, timer: t}
}

// dispatched ends the hand-out of a bus batch: the deferred writes go out
// now without a delay, else when the delay that began with the first
// batch since the last write is over.
func (w *writeDelay) dispatched() {
	d := w.h.cfg.WriteDelay
	if d <= 0 {
		w.h.writes.writeAll()
		return
	}
	if !w.armed {
		w.armed = true
		w.timer.Reset(d)
	}
}

// C fires when the delay is over (nil while none runs: a select on it
// waits for ever).
func (w *writeDelay) C() <-chan time.Time {
	if !w.armed {
		return nil
	}
	return w.timer.C
}

// expired writes what was deferred once the delay is over.
func (w *writeDelay) expired() {
	w.armed = false
	w.h.writes.writeAll()
}

// stop writes what is still deferred when the loop ends.
func (w *writeDelay) stop() {
	w.timer.Stop()
	if w.armed {
		w.expired()
	}
}

// maxLiveWriteDelay bounds Config.WriteDelay: a delay is a latency
// every push pays, and a few milliseconds already gather a loaded
// connection's frames.
const maxLiveWriteDelay = 20 * time.Millisecond
