package harness

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// CallCounter is a go-redis hook that counts what a client sends: commands,
// and round trips (a single command or a whole pipeline is one).
type CallCounter struct {
	commands   atomic.Int64
	roundTrips atomic.Int64
}

var _ redis.Hook = (*CallCounter)(nil)

// DialHook lets dials through unchanged.
func (c *CallCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts one command, one round trip.
func (c *CallCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.commands.Add(1)
		c.roundTrips.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts every command of the pipeline, one round trip.
func (c *CallCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.commands.Add(int64(len(cmds)))
		c.roundTrips.Add(1)
		return next(ctx, cmds)
	}
}

// Snapshot returns the counts so far.
func (c *CallCounter) Snapshot() (commands, roundTrips int64) {
	return c.commands.Load(), c.roundTrips.Load()
}

// Reset zeroes the counts.
func (c *CallCounter) Reset() {
	c.commands.Store(0)
	c.roundTrips.Store(0)
}

// NewCountedClient is a client of addr whose traffic c counts.
func NewCountedClient(addr string, poolSize int, c *CallCounter) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: poolSize})
	if c != nil {
		rdb.AddHook(c)
	}
	return rdb
}
