package live

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// CatchUpWorkers is how many catch-ups of a node run at once.
const CatchUpWorkers = catchUpWorkers

// Probe reaches into a Handler for the tests that drive the live channel
// through the whole API and pipeline (package api's), which must hold,
// shrink or cut what no client reaches: the subscriptions, the catch-up
// queue, the bus. Nothing in the server calls it; each setter is for
// before the node's first connection, when the hub starts.
type Probe struct{ h *liveHub }

// Probe returns the handler's probe.
func (h *Handler) Probe() Probe { return Probe{h.hub} }

// BeforeSubscribe runs fn before a catch-up subscribes a conversation's
// channel (a test holds it there to publish in between).
func (p Probe) BeforeSubscribe(fn func(conv string)) { p.h.beforeSubscribe = fn }

// SetCatchUpQueue makes the queue of catch-ups waiting for a worker hold n.
func (p Probe) SetCatchUpQueue(n int) { p.h.catchUps = make(chan catchUpJob, n) }

// SetBus makes the hub read and write through b.
func (p Probe) SetBus(b *Bus) { p.h.bus = b }

// Dispatch hands a bus payload to the connections here as if the bus had
// brought it.
func (p Probe) Dispatch(data []byte) { p.h.dispatch(data) }

// DropChannels unsubscribes convs' channels as a node does when their
// last listener left.
func (p Probe) DropChannels(ctx context.Context, convs ...string) error {
	return p.h.dropChannels(ctx, convs...)
}

// Relisted counts the conversations followed when a relist found them
// not listened to (offlinebox_live_relisted_conversations_total).
func (p Probe) Relisted() prometheus.Counter { return p.h.metrics.relisted }

// Fallbacks counts the pushes left to the device's pull, by reason
// (offlinebox_live_fallbacks_total).
func (p Probe) Fallbacks() *prometheus.CounterVec { return p.h.metrics.fallbacks }
