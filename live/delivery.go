package live

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// deliveryMetrics are the confirmed-delivery series: how long a message
// pushed to an online device took from its write (fanout's sequencing,
// write_time_ms of the record) to that device's ack of it. Observed per
// connection from what it pushed, when the ack forgets the push: no store
// call on the ack's path. A user's first device to ack is the first of
// these observations for the message.
type deliveryMetrics struct {
	confirm prometheus.Histogram
	// within counts confirmations no later than each bound (cumulative,
	// as a histogram's buckets); over offlinebox_live_pushes_total
	// {attempt="1"} each is the share confirmed in time.
	within []withinBound
	// Pending is registered by the hub (it reads the connections).
}

type withinBound struct {
	limit time.Duration
	count prometheus.Counter
}

// deliveryBounds are the targets the share is counted against.
var deliveryBounds = []struct {
	label string
	limit time.Duration
}{{"1s", time.Second}, {"10s", 10 * time.Second}, {"1m", time.Minute}}

func newDeliveryMetrics() (*deliveryMetrics, []prometheus.Collector) {
	d := &deliveryMetrics{
		confirm: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "offlinebox_delivery_confirm_seconds",
			Help:    "From a message's write (its sequencing, write_time_ms) to the ack of a device it was pushed to live.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
	}
	within := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "offlinebox_delivery_confirmed_within_total",
		Help: "Live pushes acked by their device no later than the bound after the message's write (cumulative: 1s, 10s, 1m); divide by offlinebox_live_pushes_total{attempt=\"1\"} for the confirmed-delivery rate.",
	}, []string{"within"})
	for _, b := range deliveryBounds {
		d.within = append(d.within, withinBound{b.limit, within.WithLabelValues(b.label)})
	}
	return d, []prometheus.Collector{d.confirm, within}
}

// confirmed records a device's ack at now of a push written at writeMS.
func (d *deliveryMetrics) confirmed(now time.Time, writeMS int64) {
	if d == nil || writeMS <= 0 {
		return
	}
	took := max(now.Sub(time.UnixMilli(writeMS)), 0)
	d.confirm.Observe(took.Seconds())
	for _, b := range d.within {
		if took <= b.limit {
			b.count.Inc()
		}
	}
}

// pendingPushes counts the pushes this node's connections wait an ack
// for (the ones they would push again), read at scrape time.
func (h *liveHub) pendingPushes() float64 {
	n := 0
	for _, c := range h.withPend.list() {
		c.mu.Lock()
		n += len(c.pending)
		c.mu.Unlock()
	}
	return float64(n)
}

// registerPending exports pendingPushes.
func (h *liveHub) registerPending(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "offlinebox_live_pending_pushes",
		Help: "Pushes on this node's live connections waiting for the device's ack (each is pushed again on its schedule).",
	}, h.pendingPushes)
	if err := reg.Register(g); err != nil {
		return fmt.Errorf("api: register pending pushes: %w", err)
	}
	return nil
}
