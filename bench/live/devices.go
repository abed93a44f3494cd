package main

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/client"
)

// stats gathers what devices saw in one phase.
type stats struct {
	mu        sync.Mutex
	latencies []time.Duration
	// afterStore: from the message's write time in the store (fanout's
	// clock, ms) to the device, the push path's share of latencies.
	afterStore []time.Duration
	deliveries atomic.Int64
	repushes   atomic.Int64
	dups       atomic.Int64
}

func (s *stats) observe(sent, writeMS int64) {
	if sent <= 0 {
		return
	}
	now := time.Now()
	d := time.Duration(now.UnixNano() - sent)
	s.deliveries.Add(1)
	s.mu.Lock()
	s.latencies = append(s.latencies, d)
	if writeMS > 0 {
		s.afterStore = append(s.afterStore, max(now.Sub(time.UnixMilli(writeMS)), 0))
	}
	s.mu.Unlock()
}

// sentAt reads the produce time the benchmark wrote into a body.
func sentAt(body []byte) int64 {
	if len(body) < 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(body[:8]))
}

type held struct {
	epoch, seq uint64
}

// liveDevice is one device on the live channel: it keeps what it got by
// (conv, seq), and acks what it stored in batches.
type liveDevice struct {
	cl   *client.Client
	live *client.Live

	mu    sync.Mutex
	seen  map[string]map[uint64]bool
	toAck map[string]held
}

func newLiveDevice(cl *client.Client) *liveDevice {
	return &liveDevice{cl: cl, seen: map[string]map[uint64]bool{}, toAck: map[string]held{}}
}

func (d *liveDevice) connect(ctx context.Context) error {
	l, err := d.cl.DialLive(ctx, client.LiveOptions{Buffer: 64})
	if err != nil {
		return err
	}
	d.live = l
	return nil
}

// run reads frames until the connection ends: notice conversations and
// messages are acked (the benchmark's devices store at once).
func (d *liveDevice) run(st func() *stats) {
	for {
		f, err := d.live.Next(context.Background())
		if err != nil {
			return
		}
		switch f.Type {
		case "notice":
			d.mu.Lock()
			for _, c := range f.Conversations {
				d.toAck[c.ConvID] = held{c.Epoch, c.MaxSeq}
			}
			d.mu.Unlock()
		case "message":
			m := f.Message
			s := st()
			d.mu.Lock()
			got := d.seen[m.ConvID]
			if got == nil {
				got = map[uint64]bool{}
				d.seen[m.ConvID] = got
			}
			dup := got[m.Seq]
			got[m.Seq] = true
			if len(got) > 4096 {
				clear(got)
			}
			if h := d.toAck[m.ConvID]; m.Seq > h.seq || m.Epoch != h.epoch {
				d.toAck[m.ConvID] = held{m.Epoch, m.Seq}
			}
			d.mu.Unlock()
			if f.Attempt > 1 {
				s.repushes.Add(1)
			}
			if dup {
				s.dups.Add(1)
				continue
			}
			s.observe(sentAt(m.Body), m.WriteTimeMS)
		}
	}
}

// flushAcks sends one ack frame with everything stored since the last.
func (d *liveDevice) flushAcks(ctx context.Context) {
	d.mu.Lock()
	if len(d.toAck) == 0 {
		d.mu.Unlock()
		return
	}
	items := make([]client.AckItem, 0, len(d.toAck))
	for conv, h := range d.toAck {
		items = append(items, client.AckItem{ConvID: conv, Seq: h.seq, Epoch: h.epoch})
	}
	clear(d.toAck)
	d.mu.Unlock()
	_ = d.live.Ack(ctx, items, false)
}

// poll is the pull-only design: the device syncs every interval, continuing
// from its acked cursors, and acks what it got.
func poll(ctx context.Context, cl *client.Client, every time.Duration, st *stats) {
	harness.Every(ctx, every, func() {
		res, _, err := cl.Sync(ctx, client.SyncRequest{Limit: 200})
		if err != nil {
			return
		}
		var acks []client.AckItem
		for _, c := range res.Conversations {
			var top uint64
			for _, m := range c.Messages {
				st.observe(sentAt(m.Body), m.WriteTimeMS)
				top = max(top, m.Seq)
			}
			if top > 0 {
				acks = append(acks, client.AckItem{ConvID: c.ConvID, Seq: top, Epoch: c.Epoch})
			}
		}
		if len(acks) > 0 {
			_ = cl.Ack(ctx, acks)
		}
	})
}
