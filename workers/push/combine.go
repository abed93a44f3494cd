package push

import (
	"context"
	"sync"
)

// combiner runs the items of Handle calls that arrive together in one
// resolve and one publish: the runner hands every partition of a poll to
// Handle at once, and under a steady stream each holds a record or two,
// so one round trip pair per partition was most of a record's cost. A
// call arriving while a round runs joins the next; its leader is the call
// that found none running. It adds no wait: a lone call runs at once.
type combiner struct {
	run func(ctx context.Context, items []*item) error

	mu   sync.Mutex
	next *round // gathering while busy
	busy bool
}

type round struct {
	items []*item
	done  chan struct{}
	err   error
}

// do runs items in the next round and returns its error.
func (c *combiner) do(ctx context.Context, items []*item) error {
	c.mu.Lock()
	if c.next == nil {
		c.next = &round{done: make(chan struct{})}
	}
	mine := c.next
	mine.items = append(mine.items, items...)
	if c.busy {
		c.mu.Unlock()
		select {
		case <-mine.done:
			return mine.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.busy = true
	for {
		r := c.next
		c.next = nil
		c.mu.Unlock()
		r.err = c.run(ctx, r.items)
		close(r.done)
		c.mu.Lock()
		if c.next == nil {
			c.busy = false
			c.mu.Unlock()
			return mine.err
		}
	}
}
