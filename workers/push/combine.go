package push

import (
	"context"
	"sync"
	"time"
)

// combiner runs the items of Handle calls that arrive together in one
// resolve and one publish, on a goroutine that outlives them: the runner
// hands every partition of a poll to Handle at once, each on a fresh
// goroutine, and under a steady stream each holds a record or two, so one
// round trip pair per partition (and the fresh goroutine's stack growing
// into the Redis client's) was most of a record's cost. What is queued
// while a round runs goes in the next. It adds no wait: a lone call runs
// at once.
type combiner struct {
	// run does one round. Its context ends only when the stage's does
	// not matter: every Redis call in it is bounded by the store's
	// timeout, and items of a caller that stopped waiting are pushed
	// anyway (a push repeated is harmless).
	run func(ctx context.Context, items []*item) error

	mu      sync.Mutex
	next    *round // gathering
	running bool   // the loop goroutine is there
	wake    chan struct{}
}

type round struct {
	items []*item
	done  chan struct{}
	err   error
}

// combinerIdle is how long the loop goroutine waits for work before it
// ends (the next call starts another).
const combinerIdle = 5 * time.Second

// do runs items in the next round and returns its error.
func (c *combiner) do(ctx context.Context, items []*item) error {
	c.mu.Lock()
	if c.wake == nil {
		c.wake = make(chan struct{}, 1)
	}
	if c.next == nil {
		c.next = &round{done: make(chan struct{})}
	}
	mine := c.next
	mine.items = append(mine.items, items...)
	if !c.running {
		c.running = true
		go c.loop()
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // the loop is woken already
	}
	select {
	case <-mine.done:
		return mine.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *combiner) loop() {
	idle := time.NewTimer(combinerIdle)
	defer idle.Stop()
	for {
		select {
		case <-c.wake:
		case <-idle.C:
			c.mu.Lock()
			if c.next == nil {
				c.running = false
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
		}
		c.mu.Lock()
		r := c.next
		c.next = nil
		c.mu.Unlock()
		if r != nil {
			r.err = c.run(context.Background(), r.items)
			close(r.done)
		}
		idle.Reset(combinerIdle)
	}
}
