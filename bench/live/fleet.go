package main

import (
	"context"
	"sync/atomic"
	"time"
)

// fleet is every device of the run, connected once and kept on the live
// channel through the push phase and every step of the ramp; cur is the
// stats of the phase being measured (the devices' readers look it up on
// every frame).
type fleet struct {
	devs     []*liveDevice
	cur      atomic.Pointer[stats]
	stopAcks context.CancelFunc
}

func (f *fleet) stats() *stats { return f.cur.Load() }

// openFleet makes a device per user (not yet connected) and starts their
// acks: every device acks what it stored once per ackEvery, each on its
// own phase of the cycle (devices are independent: a fleet does not ack
// in the same millisecond), a hundredth of them every hundredth.
func (b *bench) openFleet(ctx context.Context) (*fleet, error) {
	fl := &fleet{devs: make([]*liveDevice, len(b.users))}
	fl.cur.Store(&stats{})
	for i := range b.users {
		cl, err := b.clientOf(i)
		if err != nil {
			return nil, err
		}
		fl.devs[i] = newLiveDevice(cl)
	}
	actx, stop := context.WithCancel(ctx)
	fl.stopAcks = stop
	go func() {
		const slots = 100
		t := time.NewTicker(max(b.o.ackEvery/slots, time.Millisecond))
		defer t.Stop()
		for slot := 0; ; slot = (slot + 1) % slots {
			select {
			case <-actx.Done():
				return
			case <-t.C:
			}
			for i := slot; i < len(fl.devs); i += slots {
				if d := fl.devs[i]; d.live != nil {
					d.flushAcks(actx)
				}
			}
		}
	}()
	return fl, nil
}

// close stops the acks and closes every connection.
func (f *fleet) close() {
	f.stopAcks()
	for _, d := range f.devs {
		if d.live != nil {
			_ = d.live.CloseNow()
		}
	}
}
