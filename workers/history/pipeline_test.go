package history_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
	"github.com/offlinebox/offlinebox/workers/history"
)

// TestRunnerCommitsNothingWhileClickHouseIsDownAndLosesNothing runs the
// sink under the real runner: while ClickHouse refuses connections, the
// group's offsets stay where they were; once it is back, every message is
// stored once, the undecodable record is dead-lettered, and the offsets
// reach the end.
func TestRunnerCommitsNothingWhileClickHouseIsDownAndLosesNothing(t *testing.T) {
	direct, db := migratedStore(t)
	g := newGate(t, testenv.ClickHouseAddr(t))
	_, brokers := testenv.Kafka(t, 2, schemas.TopicSequenced, schemas.TopicDeadLetter)
	reg := prometheus.NewRegistry()
	h, err := history.New(history.Config{Logger: quiet, Metrics: reg}, storeAt(t, g.addr, db))
	if err != nil {
		t.Fatal(err)
	}

	convs := map[string]int{"p1": 30, "p2": 17, "p3": 5}
	var records []*kgo.Record
	for conv, n := range convs {
		for _, r := range sequenced(t, conv, n) {
			records = append(records, &kgo.Record{Topic: schemas.TopicSequenced, Key: []byte(conv), Value: r.Value})
		}
	}
	records = append(records, &kgo.Record{Topic: schemas.TopicSequenced, Key: []byte("p1"), Value: []byte("garbage")})
	produce(t, brokers, records)

	runSink(t, brokers, h, reg)

	adm := newAdmin(t, brokers)
	eventually(t, 10*time.Second, "the sink failed several inserts, or something was committed", func() bool {
		return metric(t, reg, "offlinebox_history_insert_failures_total").GetCounter().GetValue() >= 3 ||
			len(committed(t, adm)) > 0
	})
	if got := committed(t, adm); len(got) != 0 {
		t.Fatalf("committed while ClickHouse was down: %v", got)
	}

	g.open(t)
	want := ends(t, adm, schemas.TopicSequenced)
	eventually(t, 10*time.Second, "offsets committed to the end", func() bool {
		got := committed(t, adm)
		for p, end := range want {
			if got[p] != end {
				return false
			}
		}
		return true
	})
	var dead int64
	for _, end := range ends(t, adm, schemas.TopicDeadLetter) {
		dead += end
	}
	if dead != 1 {
		t.Errorf("dead letters = %d, want 1 (the garbage record)", dead)
	}
	for conv, n := range convs {
		if got, err := direct.CountMessages(testCtx(t), conv); err != nil || got != uint64(n) {
			t.Errorf("CountMessages(%s) = %d, %v; want %d", conv, got, err, n)
		}
	}
}

// runSink runs h as the history worker runs it, with short timings and
// the runner's metrics (lag included) on reg, until the test ends.
func runSink(t *testing.T, brokers []string, h *history.Handler, reg *prometheus.Registry) {
	t.Helper()
	runner, err := stream.New(stream.Config{
		Brokers: brokers, Group: "history", Topics: []string{schemas.TopicSequenced},
		DeadLetterTopic: schemas.TopicDeadLetter, MaxPollRecords: history.RecommendedMaxPollRecords,
		RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, CommitInterval: 50 * time.Millisecond,
		LagInterval: 50 * time.Millisecond, Logger: quiet, Metrics: reg,
		ExtraOpts: []kgo.Opt{
			kgo.HeartbeatInterval(100 * time.Millisecond),
			kgo.SessionTimeout(6 * time.Second),
			kgo.FetchMaxWait(100 * time.Millisecond),
		},
	}, h)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runner.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
		runner.Close()
	})
}

func produce(t *testing.T, brokers []string, records []*kgo.Record) {
	t.Helper()
	cl, err := stream.NewProducer(brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(testCtx(t), records...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func newAdmin(t *testing.T, brokers []string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// committed returns the history group's committed offsets by partition.
func committed(t *testing.T, adm *kadm.Client) map[int32]int64 {
	t.Helper()
	resp, err := adm.FetchOffsets(testCtx(t), "history")
	if errors.Is(err, kerr.GroupIDNotFound) {
		return nil // kfake: a group that never committed does not exist
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.Topic == schemas.TopicSequenced && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out
}

func ends(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	resp, err := adm.ListEndOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	resp.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

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

// TestConsumerLagRisesWhileClickHouseIsDownAndFallsToZeroAfter: the lag
// an alert watches is measured from the group's commits, so it rises while
// the sink cannot reach ClickHouse and records keep arriving, and falls to
// zero once ClickHouse is back and everything is stored.
func TestConsumerLagRisesWhileClickHouseIsDownAndFallsToZeroAfter(t *testing.T) {
	_, db := migratedStore(t)
	g := newGate(t, testenv.ClickHouseAddr(t))
	_, brokers := testenv.Kafka(t, 2, schemas.TopicSequenced, schemas.TopicDeadLetter)
	reg := prometheus.NewRegistry()
	h, err := history.New(history.Config{Logger: quiet, Metrics: reg}, storeAt(t, g.addr, db))
	if err != nil {
		t.Fatal(err)
	}
	runSink(t, brokers, h, reg)

	lag := func() (sum float64, series int) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "offlinebox_stream_consumer_lag" {
				continue
			}
			for _, m := range mf.GetMetric() {
				sum += m.GetGauge().GetValue()
				series++
			}
		}
		return sum, series
	}
	// 40 records arrive over a while, all of them while ClickHouse is down.
	for i := range 4 {
		var recs []*kgo.Record
		for _, r := range sequenced(t, fmt.Sprintf("lag%d", i), 10) {
			recs = append(recs, &kgo.Record{Topic: schemas.TopicSequenced, Key: r.Key, Value: r.Value})
		}
		produce(t, brokers, recs)
		time.Sleep(50 * time.Millisecond)
	}
	eventually(t, 10*time.Second, "the lag gauge rose to the 40 records while ClickHouse was down", func() bool {
		sum, _ := lag()
		return sum >= 40
	})
	g.open(t)
	eventually(t, 20*time.Second, "the lag gauge fell back to 0 on both partitions after ClickHouse came back", func() bool {
		sum, series := lag()
		return series == 2 && sum == 0
	})
}
