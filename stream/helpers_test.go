package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testConfig is a runner config tuned for kfake: fast heartbeats so that
// rebalances are seen in a tenth of a second, short fetch waits, short
// backoffs and commit intervals.
func testConfig(t *testing.T, addrs []string, group string, topics ...string) Config {
	t.Helper()
	return Config{
		Brokers:         addrs,
		Group:           group,
		Topics:          topics,
		DeadLetterTopic: "dead",
		MaxPollRecords:  50,
		RetryMin:        5 * time.Millisecond,
		RetryMax:        50 * time.Millisecond,
		CommitInterval:  50 * time.Millisecond,
		CommitTimeout:   5 * time.Second,
		ProduceTimeout:  2 * time.Second,
		LagInterval:     50 * time.Millisecond,
		Logger:          slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		ExtraOpts: []kgo.Opt{
			kgo.HeartbeatInterval(100 * time.Millisecond),
			kgo.SessionTimeout(6 * time.Second), // kfake's minimum
			kgo.FetchMaxWait(100 * time.Millisecond),
		},
	}
}

// running is a Runner whose Run goroutine the test controls.
type running struct {
	r      *Runner
	cancel context.CancelFunc
	done   chan error
}

// start creates a runner and runs it until stop (or the test's end).
func start(t *testing.T, cfg Config, h Handler) *running {
	t.Helper()
	r, err := New(cfg, h)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rr := &running{r: r, cancel: cancel, done: make(chan error, 1)}
	go func() { rr.done <- r.Run(ctx) }()
	t.Cleanup(func() { rr.stop(t) })
	return rr
}

// stop cancels Run, waits for it to return and closes the runner.
func (rr *running) stop(t *testing.T) {
	t.Helper()
	if rr.cancel == nil {
		return
	}
	rr.cancel()
	rr.cancel = nil
	select {
	case err := <-rr.done:
		if err != nil {
			t.Errorf("Run returned %v, want nil after cancel", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("Run did not return after cancel")
	}
	rr.r.Close()
}

// produce writes n records to topic with values prefix-0 .. prefix-(n-1),
// keyed so that they spread over partitions, and waits for the acks.
func produce(t *testing.T, addrs []string, topic, prefix string, n int) {
	t.Helper()
	if err := produceRecords(addrs, topic, prefix, n); err != nil {
		t.Fatal(err)
	}
}

// produceRecords is produce for goroutines other than the test's own.
func produceRecords(addrs []string, topic, prefix string, n int) error {
	cl, err := NewProducer(addrs)
	if err != nil {
		return err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce to %s: %w", topic, err)
	}
	return nil
}

func admin(t *testing.T, addrs []string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// positions are offsets by partition of one topic.
type positions map[int32]int64

// committed returns the group's committed offsets of topic (absent: none).
func committed(t *testing.T, adm *kadm.Client, group, topic string) positions {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return positions{} // kfake: a group that never committed does not exist
	}
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	out := positions{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.Topic == topic && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out
}

// ends returns the end offset of every partition of topic.
func ends(t *testing.T, adm *kadm.Client, topic string) positions {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	out := positions{}
	resp.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitCommittedToEnd waits until the group committed the end of every
// partition of topic.
func waitCommittedToEnd(t *testing.T, adm *kadm.Client, group, topic string) {
	t.Helper()
	want := ends(t, adm, topic)
	var got positions
	eventually(t, 8*time.Second, "committed offsets reach the end", func() bool {
		got = committed(t, adm, group, topic)
		for p, end := range want {
			if end > 0 && got[p] != end {
				return false
			}
		}
		return true
	})
}

// journal records every Handle call a handler got.
type journal struct {
	mu    sync.Mutex
	calls [][]*kgo.Record
}

func (j *journal) add(recs []*kgo.Record) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls = append(j.calls, slices.Clone(recs))
}

// offsets returns, per partition, the offsets handled, in handling order.
func (j *journal) offsets() positionsLog {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := positionsLog{}
	for _, c := range j.calls {
		for _, r := range c {
			out[r.Partition] = append(out[r.Partition], r.Offset)
		}
	}
	return out
}

func (j *journal) records() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, c := range j.calls {
		n += len(c)
	}
	return n
}

// positionsLog lists offsets per partition in the order they were seen.
type positionsLog map[int32][]int64

// gauge reads one series of a registered gauge or counter.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metric
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}
