package stream

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

// The lag gauge comes from the group's commits, so it rises while every
// batch fails (a store is down) and records keep arriving, and falls back
// to zero once they are handled and committed.
func TestRunner_LagGrowsWhileBatchesStallAndReturnsToZeroAfter(t *testing.T) {
	const partitions = 2
	_, addrs := testenv.Kafka(t, partitions, "in", "dead")
	var down atomic.Bool
	down.Store(true)
	h := HandlerFunc(func(_ context.Context, recs []*kgo.Record) ([]DeadLetter, error) {
		if down.Load() {
			return nil, errors.New("store down")
		}
		return nil, nil
	})
	reg := prometheus.NewRegistry()
	cfg := testConfig(t, addrs, "lag", "in")
	cfg.Metrics = reg
	start(t, cfg, h)

	// total is the lag summed over the partitions, or -1 until every
	// partition has a series.
	total := func() float64 {
		var sum float64
		for p := range partitions {
			v := metricValue(t, reg, "offlinebox_stream_consumer_lag", map[string]string{"group": "lag", "partition": fmt.Sprint(p)})
			if v < 0 {
				return -1
			}
			sum += v
		}
		return sum
	}
	waitFor := func(what string, cond func(float64) bool) float64 {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			v := total()
			if cond(v) {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: lag stayed %v", what, v)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	produce(t, addrs, "in", "a", 20)
	first := waitFor("lag of 20 records while the handler fails", func(v float64) bool { return v >= 20 })
	produce(t, addrs, "in", "b", 20)
	waitFor("lag grows as records arrive during the stall", func(v float64) bool { return v >= first+20 })
	down.Store(false)
	waitFor("lag back to zero once handled", func(v float64) bool { return v == 0 })
}
