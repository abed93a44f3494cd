package stream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

func TestRunner_HandlesEachPartitionInOrderAndPartitionsConcurrently(t *testing.T) {
	const partitions, n = 4, 400
	_, addrs := testenv.Kafka(t, partitions, "in", "dead")
	adm := admin(t, addrs)
	produce(t, addrs, "in", "m", n)

	var (
		j          journal
		inFlight   [partitions]atomic.Int32
		overlapped atomic.Bool
		active     atomic.Int32
		maxActive  atomic.Int32
	)
	h := HandlerFunc(func(_ context.Context, recs []*kgo.Record) ([]DeadLetter, error) {
		p := recs[0].Partition
		for _, r := range recs {
			if r.Partition != p {
				t.Errorf("one Handle call got partitions %d and %d", p, r.Partition)
			}
		}
		if inFlight[p].Add(1) > 1 {
			overlapped.Store(true)
		}
		a := active.Add(1)
		for m := maxActive.Load(); a > m && !maxActive.CompareAndSwap(m, a); m = maxActive.Load() {
		}
		// Long enough for the other partitions of the poll to overlap.
		time.Sleep(5 * time.Millisecond)
		j.add(recs)
		active.Add(-1)
		inFlight[p].Add(-1)
		return nil, nil
	})
	reg := prometheus.NewRegistry()
	cfg := testConfig(t, addrs, "order", "in")
	cfg.Metrics = reg
	start(t, cfg, h)
	waitCommittedToEnd(t, adm, "order", "in")

	end := ends(t, adm, "in")
	got := j.offsets()
	for p := int32(0); p < partitions; p++ {
		if int64(len(got[p])) != end[p] {
			t.Errorf("partition %d: handled %d records, want %d", p, len(got[p]), end[p])
		}
		for i, off := range got[p] {
			if off != int64(i) {
				t.Fatalf("partition %d: handled offsets %v, want 0..%d in order", p, got[p], end[p]-1)
			}
		}
	}
	if overlapped.Load() {
		t.Error("two Handle calls of one partition ran at the same time")
	}
	if maxActive.Load() < 2 {
		t.Errorf("at most %d partitions were handled at once, want them concurrent", maxActive.Load())
	}
	if v := metricValue(t, reg, "offlinebox_stream_records_handled_total", map[string]string{"group": "order", "topic": "in"}); v != n {
		t.Errorf("records_handled_total = %v, want %d", v, n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for p := range partitions {
		labels := map[string]string{"group": "order", "partition": fmt.Sprint(p)}
		for metricValue(t, reg, "offlinebox_stream_consumer_lag", labels) != 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if lag := metricValue(t, reg, "offlinebox_stream_consumer_lag", labels); lag != 0 {
			t.Errorf("consumer_lag of partition %d = %v, want 0 after draining", p, lag)
		}
	}
}

func TestRunner_FailedBatchIsRetriedWholeAndNeverCommitted(t *testing.T) {
	tests := []struct {
		name string
		fail func(recs []*kgo.Record) ([]DeadLetter, error)
	}{
		{"handler returns an error", func([]*kgo.Record) ([]DeadLetter, error) {
			return nil, errors.New("store down")
		}},
		{"handler returns a dead letter without its record", func(recs []*kgo.Record) ([]DeadLetter, error) {
			return []DeadLetter{{Record: recs[0], Reason: "bad"}, {Reason: "lost its record"}}, nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, addrs := testenv.Kafka(t, 1, "in", "dead")
			adm := admin(t, addrs)
			produce(t, addrs, "in", "m", 5)

			var failing journal
			reg := prometheus.NewRegistry()
			cfg := testConfig(t, addrs, "retry", "in")
			cfg.Metrics = reg
			first := start(t, cfg, HandlerFunc(func(_ context.Context, recs []*kgo.Record) ([]DeadLetter, error) {
				failing.add(recs)
				return tt.fail(recs)
			}))
			eventually(t, 5*time.Second, "the failing batch is retried", func() bool {
				failing.mu.Lock()
				defer failing.mu.Unlock()
				return len(failing.calls) >= 4
			})
			first.stop(t)

			failing.mu.Lock()
			for i, call := range failing.calls {
				if call[0].Offset != 0 || len(call) != len(failing.calls[0]) {
					t.Errorf("call %d got offsets %d..%d, want the same records as call 0 (from offset 0)",
						i, call[0].Offset, call[len(call)-1].Offset)
				}
			}
			calls := len(failing.calls)
			failing.mu.Unlock()
			if got := committed(t, adm, "retry", "in"); len(got) != 0 {
				t.Fatalf("committed %v while every batch failed, want nothing", got)
			}
			if got := ends(t, adm, "dead")[0]; got != 0 {
				t.Errorf("%d dead letters produced from failed batches, want none", got)
			}
			if v := metricValue(t, reg, "offlinebox_stream_handler_retries_total", map[string]string{"group": "retry"}); v < float64(calls-1) {
				t.Errorf("handler_retries_total = %v, want at least %d", v, calls-1)
			}

			// A restarted member of the group gets the same, uncommitted records.
			var ok journal
			start(t, cfg, HandlerFunc(func(_ context.Context, recs []*kgo.Record) ([]DeadLetter, error) {
				ok.add(recs)
				return nil, nil
			}))
			waitCommittedToEnd(t, adm, "retry", "in")
			if got := ok.offsets()[0]; len(got) != 5 || got[0] != 0 {
				t.Fatalf("restarted member handled offsets %v, want 0..4", got)
			}
		})
	}
}

func TestRunner_DeadLettersLandWithHeadersAndPartitionMovesOn(t *testing.T) {
	_, addrs := testenv.Kafka(t, 1, "in", "dead")
	adm := admin(t, addrs)
	prod, err := NewProducer(addrs)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	values := []string{"ok-0", "bad-1", "ok-2", "bad-3", "ok-4"}
	for i, v := range values {
		rec := &kgo.Record{Topic: "in", Key: []byte(fmt.Sprint("k", i)), Value: []byte(v),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte(fmt.Sprint("t", i))}}}
		if err := prod.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	var j journal
	reg := prometheus.NewRegistry()
	cfg := testConfig(t, addrs, "dlq", "in")
	cfg.Metrics = reg
	start(t, cfg, HandlerFunc(func(_ context.Context, recs []*kgo.Record) ([]DeadLetter, error) {
		j.add(recs)
		var dead []DeadLetter
		for _, r := range recs {
			if string(r.Value[:3]) == "bad" {
				dead = append(dead, DeadLetter{Record: r, Reason: "undecodable " + string(r.Value)})
			}
		}
		return dead, nil
	}))
	waitCommittedToEnd(t, adm, "dlq", "in")

	got := readAll(t, addrs, "dead", 2)
	want := []struct{ key, value, offset string }{{"k1", "bad-1", "1"}, {"k3", "bad-3", "3"}}
	if len(got) != len(want) {
		t.Fatalf("dead-letter topic has %d records, want %d", len(got), len(want))
	}
	for i, w := range want {
		r := got[i]
		h := headers(r)
		if string(r.Key) != w.key || string(r.Value) != w.value {
			t.Errorf("dead letter %d = %s/%s, want %s/%s", i, r.Key, r.Value, w.key, w.value)
		}
		wantHeaders := map[string]string{
			"trace": "t" + w.offset, "dead-reason": "undecodable " + w.value,
			"dead-topic": "in", "dead-partition": "0", "dead-offset": w.offset,
		}
		for k, v := range wantHeaders {
			if h[k] != v {
				t.Errorf("dead letter %d header %s = %q, want %q", i, k, h[k], v)
			}
		}
	}
	if n := j.records(); n != len(values) {
		t.Errorf("handled %d records, want %d (the partition moves on past dead letters)", n, len(values))
	}
	if v := metricValue(t, reg, "offlinebox_stream_dead_letters_total", map[string]string{"group": "dlq", "topic": "in"}); v != 2 {
		t.Errorf("dead_letters_total = %v, want 2", v)
	}
}

func TestRunner_DeadLetterProduceFailureHoldsCommitUntilAcked(t *testing.T) {
	c, addrs := testenv.Kafka(t, 1, "in") // no dead-letter topic yet: produce fails
	adm := admin(t, addrs)
	produce(t, addrs, "in", "bad", 3)

	reg := prometheus.NewRegistry()
	cfg := testConfig(t, addrs, "dlqfail", "in")
	cfg.Metrics = reg
	cfg.ExtraOpts = append(cfg.ExtraOpts, kgo.UnknownTopicRetries(1))
	start(t, cfg, HandlerFunc(func(_ context.Context, recs []*kgo.Record) ([]DeadLetter, error) {
		dead := make([]DeadLetter, len(recs))
		for i, r := range recs {
			dead[i] = DeadLetter{Record: r, Reason: "poison"}
		}
		return dead, nil
	}))
	eventually(t, 8*time.Second, "the failed dead-letter produce is retried", func() bool {
		return metricValue(t, reg, "offlinebox_stream_handler_retries_total", map[string]string{"group": "dlqfail"}) >= 1
	})
	if got := committed(t, adm, "dlqfail", "in"); len(got) != 0 {
		t.Fatalf("committed %v before the dead letters were acked, want nothing", got)
	}
	if err := c.CreateTopic("dead", 1, nil); err != nil {
		t.Fatalf("create dead-letter topic: %v", err)
	}
	waitCommittedToEnd(t, adm, "dlqfail", "in")
	got := readAll(t, addrs, "dead", 3)
	seen := map[string]bool{}
	for _, r := range got {
		seen[headers(r)["dead-offset"]] = true
	}
	for _, off := range []string{"0", "1", "2"} {
		if !seen[off] {
			t.Errorf("dead letter of offset %s missing from %d records", off, len(got))
		}
	}
}

func TestRunner_ShutdownCommitsTheBatchInFlight(t *testing.T) {
	_, addrs := testenv.Kafka(t, 1, "in", "dead")
	adm := admin(t, addrs)
	produce(t, addrs, "in", "old", 10)

	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	var first journal
	r := start(t, testConfig(t, addrs, "drain", "in"), HandlerFunc(func(ctx context.Context, recs []*kgo.Record) ([]DeadLetter, error) {
		once.Do(func() { close(entered) })
		<-release // in flight while shutdown begins
		if ctx.Err() != nil {
			return nil, fmt.Errorf("handler context cancelled during drain: %w", ctx.Err())
		}
		first.add(recs)
		return nil, nil
	}))
	<-entered
	r.cancel() // shutdown begins while Handle runs
	time.Sleep(50 * time.Millisecond)
	close(release)
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	r.cancel = nil
	r.r.Close()
	r.r.Close() // idempotent

	handled := first.offsets()[0]
	if len(handled) == 0 {
		t.Fatal("the batch in flight was not finished")
	}
	next := handled[len(handled)-1] + 1
	if got := committed(t, adm, "drain", "in"); got[0] != next {
		t.Fatalf("committed %v after shutdown, want partition 0 at %d", got, next)
	}

	// A restarted member starts after the committed batch.
	var second journal
	start(t, testConfig(t, addrs, "drain", "in"), HandlerFunc(func(_ context.Context, recs []*kgo.Record) ([]DeadLetter, error) {
		second.add(recs)
		return nil, nil
	}))
	waitCommittedToEnd(t, adm, "drain", "in")
	got := second.offsets()[0]
	if len(got) == 0 && next < 10 {
		t.Fatalf("restarted member handled nothing, want offsets %d..9", next)
	}
	if len(got) > 0 && got[0] != next {
		t.Fatalf("restarted member started at offset %d, want %d (the committed batch is not handled again)", got[0], next)
	}
}

// readAll consumes topic from the start until it has n records.
func readAll(t *testing.T, addrs []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: got %d records, want %d", topic, len(out), n)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func headers(r *kgo.Record) map[string]string {
	h := map[string]string{}
	for _, kv := range r.Headers {
		h[kv.Key] = string(kv.Value)
	}
	return h
}
