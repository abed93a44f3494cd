package live

import (
	"cmp"
	"context"
	"github.com/offlinebox/offlinebox/promreg"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/redisstore"
)

// ackFlushMetrics are the series of the acks' flushes.
type ackFlushMetrics struct {
	flushes  prometheus.Counter
	devices  prometheus.Histogram
	seconds  prometheus.Histogram
	failures prometheus.Counter
	dropped  prometheus.Counter
	sync     prometheus.Counter
}

func newAckFlushMetrics(s *promreg.Set) *ackFlushMetrics {
	return &ackFlushMetrics{
		flushes: s.Counter("offlinebox_live_ack_flushes_total", "Flushes of the acks held on this node (one pipelined call per store each)."),
		devices: s.Histogram("offlinebox_live_ack_flush_devices", "Devices whose acks one flush wrote (each device's acks within the flush interval coalesced).",
			prometheus.ExponentialBuckets(1, 4, 8)),
		seconds: s.Histogram("offlinebox_live_ack_flush_seconds", "How long one flush of the held acks took.",
			prometheus.ExponentialBuckets(0.0005, 2.5, 12)),
		failures: s.Counter("offlinebox_live_ack_flush_failures_total", "Devices whose held acks a flush could not write (held for the next flush once)."),
		dropped:  s.Counter("offlinebox_live_acks_dropped_total", "Devices whose held acks were given up after a second failed flush (their messages are pushed again)."),
		sync:     s.Counter("offlinebox_live_acks_sync_total", "Ack frames applied at once, as POST /v1/ack, because the held acks were full or the hub was closing."),
	}
}

// run flushes every interval, and early when the pending set is full,
// until the hub closes.
func (f *ackFlusher) run(ctx context.Context) {
	defer close(f.stopped)
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-f.early:
		}
		f.flush()
	}
}

// close stops taking acks (those read later go the synchronous way) and
// writes every one held before it returns: a clean shutdown loses none.
func (f *ackFlusher) close(loopStarted bool) {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	if loopStarted {
		<-f.stopped
	}
	f.flush()
}

// flushTimeout bounds one flush: a pipelined call, the full step of the
// devices found unregistered, a route again, the raises' direct call.
func (f *ackFlusher) flushTimeout() time.Duration {
	return 4 * f.h.store.Config().CallTimeout
}

// flush writes the held acks, then hands their delivered marks to the
// raises (or raises them now when that batch is full).
func (f *ackFlusher) flush() {
	f.flushing.Lock()
	defer f.flushing.Unlock()
	f.mu.Lock()
	batch := f.pending
	if len(batch) > 0 {
		f.pending, f.items = map[ackKey]*pendingAcks{}, 0
	}
	f.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.flushTimeout())
	defer cancel()
	keys := make([]ackKey, 0, len(batch))
	acks := make([]redisstore.DeviceAck, 0, len(batch))
	for k, p := range batch {
		items := make([]redisstore.AckItem, 0, len(p.items))
		for _, it := range p.items {
			items = append(items, it)
		}
		keys = append(keys, k)
		acks = append(acks, redisstore.DeviceAck{User: k.user, Device: k.dev, Items: items, NowMS: p.nowMS,
			Registered: p.conn != nil && p.conn.ackRegistered.Load()})
	}
	start := time.Now()
	res, errs := f.h.router.AckRegisteredDevices(ctx, acks)
	m := f.h.metrics.ackFlush
	m.flushes.Inc()
	m.devices.Observe(float64(len(acks)))
	m.seconds.Observe(time.Since(start).Seconds())
	var marks []redisstore.ReceiptMark
	var senders []map[string]uint64
	var failed, kept int
	var firstErr error
	for i, k := range keys {
		p := batch[k]
		if errs[i] != nil {
			failed++
			if f.failed(k, p) {
				kept++
			}
			firstErr = cmp.Or(firstErr, errs[i])
			continue
		}
		if p.conn != nil {
			p.conn.ackRegistered.Store(true)
		}
		if res[i].WasEvicted || len(res[i].Evicted) > 0 {
			f.tell(k, p, len(acks[i].Items), res[i])
		}
		for conv, mk := range p.marks {
			marks, senders = append(marks, mk), append(senders, p.senders[conv])
		}
	}
	if failed > 0 {
		f.h.log.Warn("write held acks", "devices", failed, "held_again", kept, "err", firstErr)
	}
	f.raise(ctx, marks, senders)
}

// raise hands the flushed acks' marks to the next batch of raises, or
// raises them now when that batch has no room: either way after the
// device's cursors were written.
func (f *ackFlusher) raise(ctx context.Context, marks []redisstore.ReceiptMark, senders []map[string]uint64) {
	if len(marks) == 0 {
		return
	}
	if f.h.raises.room(len(marks)) {
		f.h.raises.addEach(marks, senders)
		return
	}
	f.h.raises.raise(ctx, marks, senders)
}

// failed holds a device's acks again for the next flush, once, and says
// whether it did; a second failure gives them up (the device's messages
// are pushed again, and it drops them as duplicates; its next ack covers
// them).
func (f *ackFlusher) failed(k ackKey, p *pendingAcks) bool {
	f.h.metrics.ackFlush.failures.Inc()
	f.mu.Lock()
	keep := !p.retried && !f.closed && len(f.pending) < maxPendingAckDevices && f.items+len(p.items) <= maxPendingAckItems
	if keep {
		items := make([]redisstore.AckItem, 0, len(p.items))
		for _, it := range p.items {
			items = append(items, it)
		}
		marks := make([]redisstore.ReceiptMark, 0, len(p.marks))
		for _, mk := range p.marks {
			marks = append(marks, mk)
		}
		q := f.pending[k]
		if q == nil {
			q = &pendingAcks{conn: p.conn, items: map[string]redisstore.AckItem{}, marks: map[string]redisstore.ReceiptMark{}, nowMS: p.nowMS}
			f.pending[k] = q
		}
		q.retried = true
		f.items += q.merge(items, marks, p.senders)
	}
	f.mu.Unlock()
	if !keep {
		f.h.metrics.ackFlush.dropped.Inc()
	}
	return keep
}

// tell sends the device what only the write learnt (it had been evicted
// and must resync in full; its ack evicted others) in an acked frame, the
// one the protocol sends when a device must learn something; without an
// open connection here, its next ack answer on this node carries it.
func (f *ackFlusher) tell(k ackKey, p *pendingAcks, n int, res redisstore.AckResult) {
	if res.Evicted == nil {
		res.Evicted = []string{}
	}
	if p.conn != nil && p.conn.isOpen() {
		p.conn.send(jsonFrame(ackedFrame{Type: "acked", Acked: n, Resync: res.WasEvicted, EvictedDevices: res.Evicted}), false)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.owed) >= maxOwedAnswers {
		for old := range f.owed { // one arbitrary entry makes room
			delete(f.owed, old)
			break
		}
	}
	f.owed[k] = res
}
