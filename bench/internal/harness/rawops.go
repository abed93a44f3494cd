package harness

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// RawWriteRate measures the machine's raw Redis limit: trivial writes (SET
// of a small value), pipelined 500 per round trip on conns connections, for
// about d. It returns writes per second. The keys are deleted afterwards.
func RawWriteRate(ctx context.Context, addr, prefix string, conns int, d time.Duration) (float64, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: conns})
	defer rdb.Close()
	const perPipe = 500
	var ops atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	start := time.Now()
	deadline := start.Add(d)
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := prefix + "raw:" + strconv.Itoa(c) + ":"
			for time.Now().Before(deadline) {
				_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
					for i := range perPipe {
						p.Set(ctx, key+strconv.Itoa(i), "x", 0)
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				ops.Add(perPipe)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, fmt.Errorf("raw writes: %w", err)
	}
	for c := range conns {
		keys := make([]string, perPipe)
		for i := range keys {
			keys[i] = prefix + "raw:" + strconv.Itoa(c) + ":" + strconv.Itoa(i)
		}
		if err := rdb.Del(ctx, keys...).Err(); err != nil {
			return 0, fmt.Errorf("raw writes cleanup: %w", err)
		}
	}
	return float64(ops.Load()) / elapsed.Seconds(), nil
}
