package checker

import (
	"context"
	"errors"
	"time"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/client"
)

// liveLoop keeps the device on the live channel until done is closed: it
// stores what is pushed, acks on the socket what it holds contiguously,
// syncs when the notice or a gap says so, and when the connection drops
// (its API process died) connects to the next node and catches up.
func (d *device) liveLoop(ctx context.Context, done <-chan struct{}, urls []string, first int) {
	for attempt := first; ; attempt++ {
		select {
		case <-done:
			d.flushOutbox(ctx)
			return
		case <-ctx.Done():
			return
		default:
		}
		err := d.liveSession(ctx, done, urls[attempt%len(urls)])
		if err != nil {
			_ = harness.Sleep(ctx, 200*time.Millisecond)
		}
	}
}

func (d *device) liveSession(ctx context.Context, done <-chan struct{}, url string) error {
	cl := client.New(url, d.cl.Token, d.cl.HTTP)
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	l, err := cl.DialLive(dctx, client.LiveOptions{Buffer: 1024})
	cancel()
	if err != nil {
		return d.failed(err)
	}
	defer l.CloseNow()
	d.stats.LiveSessions++
	if err := d.catchUpOnce(ctx); err != nil { // what the notice names, and the gaps
		return err
	}
	for {
		select {
		case <-done:
			return nil
		default:
		}
		fctx, fcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		f, err := l.Next(fctx)
		fcancel()
		switch {
		case errors.Is(err, client.ErrLiveClosed):
			d.stats.LiveDrops++
			return nil
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if len(d.outbox) > 0 && d.rng.IntN(10) == 0 {
				if err := d.send(ctx, d.outbox[0]); err != nil {
					return err
				}
				d.outbox = d.outbox[1:]
			}
			continue
		}
		if f.Type != "message" || f.Message == nil {
			continue
		}
		d.stats.Pushed++
		ack, gap := d.st.putLive(f.Message)
		if ack != nil {
			if err := l.Ack(ctx, []client.AckItem{*ack}, false); err != nil {
				return d.failed(err)
			}
			d.stats.LiveAcks++
		}
		if gap {
			if err := d.catchUpOnce(ctx); err != nil {
				return err
			}
		}
	}
}

// putLive stores a pushed message. It returns the ack to send when the
// conversation's contiguous cursor rose (an ack says "stored up to", so
// never past a hole), and whether a hole or another epoch calls for a
// sync.
func (s *localStore) putLive(m *client.Message) (*client.AckItem, bool) {
	c := s.conv(m.ConvID)
	if c.epoch != 0 && c.epoch != m.Epoch {
		return nil, true
	}
	s.put(m)
	if m.Seq != c.cursor+1 {
		return nil, m.Seq > c.cursor
	}
	c.epoch = m.Epoch
	for {
		if _, ok := c.msgs[client.Cursor{Seq: c.cursor + 1, Epoch: c.epoch}]; !ok {
			break
		}
		c.cursor++
	}
	return &client.AckItem{ConvID: m.ConvID, Seq: c.cursor, Epoch: c.epoch}, false
}
