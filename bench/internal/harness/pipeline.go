package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
	"github.com/offlinebox/offlinebox/topology"
	"github.com/offlinebox/offlinebox/workers/fanout"
)

// QuietLogger drops the stages' logs below warnings: progress lines are the
// benchmark's own.
func QuietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Stage is one worker group run in-process on a stream.Runner, with the
// records its handler finished counted, and the time from the first Handle
// call to the end of the last one.
type Stage struct {
	runner  *stream.Runner
	handled atomic.Int64
	failed  atomic.Int64
	done    chan struct{}

	mu          sync.Mutex
	first, last time.Time
	// runs counts, for the successful Handle calls, how often a key came
	// with n records in one call: runs[n] (see FewestBatches).
	runs map[int]int
}

// countingHandler counts the records of successful Handle calls.
type countingHandler struct {
	s    *Stage
	next stream.Handler
}

func (h countingHandler) Handle(ctx context.Context, recs []*kgo.Record) ([]stream.DeadLetter, error) {
	start := time.Now()
	h.s.mu.Lock()
	if h.s.first.IsZero() {
		h.s.first = start
	}
	h.s.mu.Unlock()
	dead, err := h.next.Handle(ctx, recs)
	if err != nil {
		h.s.failed.Add(1)
		return dead, err
	}
	perKey := map[string]int{}
	for _, r := range recs {
		perKey[string(r.Key)]++
	}
	h.s.mu.Lock()
	h.s.last = time.Now()
	for _, n := range perKey {
		h.s.runs[n]++
	}
	h.s.mu.Unlock()
	h.s.handled.Add(int64(len(recs)))
	return dead, nil
}

// StartStage runs h in consumer group cfg.Group until Stop; cfg is a
// stage's topology.Stage.RunnerConfig with the caller's own settings.
func StartStage(cfg stream.Config, h stream.Handler) (*Stage, error) {
	s := &Stage{done: make(chan struct{}), runs: map[int]int{}}
	if cfg.Logger == nil {
		cfg.Logger = QuietLogger()
	}
	if cfg.DeadLetterTopic == "" {
		cfg.DeadLetterTopic = schemas.TopicDeadLetter
	}
	r, err := stream.New(cfg, countingHandler{s: s, next: h})
	if err != nil {
		return nil, err
	}
	s.runner = r
	go func() {
		defer close(s.done)
		_ = r.Run(context.Background())
	}()
	return s, nil
}

// Handled is how many records the handler finished.
func (s *Stage) Handled() int64 { return s.handled.Load() }

// Failed is how many Handle calls failed (and were retried).
func (s *Stage) Failed() int64 { return s.failed.Load() }

// Busy is the time from the first Handle call to the end of the last
// successful one.
func (s *Stage) Busy() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first.IsZero() || s.last.IsZero() {
		return 0
	}
	return s.last.Sub(s.first)
}

// FewestBatches is the fewest batches of at most size records of one key
// that the successful Handle calls allow: a key's records in one call
// cannot merge with those of another call, so a stage that merges per key
// and call makes at least this many, however well it merges.
func (s *Stage) FewestBatches(size int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fewestBatches(s.runs, size)
}

func fewestBatches(runs map[int]int, size int) int {
	total := 0
	for n, times := range runs {
		total += times * ((n + size - 1) / size)
	}
	return total
}

// ResetClock forgets the first and last Handle times, before a timed phase.
func (s *Stage) ResetClock() {
	s.mu.Lock()
	s.first, s.last = time.Time{}, time.Time{}
	s.mu.Unlock()
}

// WaitHandled waits until at least n records were handled, logging
// progress every few seconds.
func (s *Stage) WaitHandled(ctx context.Context, n int64, what string, log *Log) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	lastLog := time.Now()
	for s.handled.Load() < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %d of %d records handled: %w", what, s.handled.Load(), n, ctx.Err())
		case <-tick.C:
		}
		if time.Since(lastLog) > 5*time.Second {
			lastLog = time.Now()
			log.Printf("%s: %d / %d records (%d failed calls retried)", what, s.handled.Load(), n, s.failed.Load())
		}
	}
	return nil
}

// Stop ends the runner (what is finished is committed) and waits for it.
func (s *Stage) Stop() {
	s.runner.Close()
	<-s.done
}

// Fanout is the fanout worker running on a stage, with its own Redis
// client whose calls are counted and its own metrics registry.
type Fanout struct {
	*Stage
	Worker   *fanout.Fanout
	Calls    *CallCounter
	Registry *prometheus.Registry
	rdb      *redis.Client
	producer *kgo.Client
}

// StartFanout runs the fanout worker as the topology's fanout stage,
// writing to the stack's Redis with the store prefix of cfg.
func StartFanout(st *Stack, cfg fanout.Config) (*Fanout, error) {
	f := &Fanout{Calls: &CallCounter{}, Registry: prometheus.NewRegistry()}
	f.rdb = NewCountedClient(st.RedisAddr, 64, f.Calls)
	var err error
	if f.producer, err = stream.NewProducer(st.Brokers); err != nil {
		f.close()
		return nil, err
	}
	cfg.Metrics = f.Registry
	cfg.Brokers = st.Brokers
	if cfg.Logger == nil {
		cfg.Logger = QuietLogger()
	}
	if f.Worker, err = fanout.New(cfg, f.rdb, f.producer); err != nil {
		f.close()
		return nil, err
	}
	rc := topology.Fanout().RunnerConfig(st.Brokers)
	rc.Logger = cfg.Logger
	f.Stage, err = StartStage(rc, f.Worker)
	if err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

// Stop stops the runner, then the worker and its clients.
func (f *Fanout) Stop() {
	if f.Stage != nil {
		f.Stage.Stop()
	}
	f.close()
}

func (f *Fanout) close() {
	if f.Worker != nil {
		f.Worker.Close()
	}
	if f.producer != nil {
		f.producer.Close()
	}
	_ = f.rdb.Close()
}

// MergedAtMost counts the fanout's merges of one stage ("sequence" or
// "inbox") of at most bound records (a bucket bound of the histogram).
func (f *Fanout) MergedAtMost(stage string, bound int) (uint64, error) {
	return HistogramAtMost(f.Registry, "offlinebox_fanout_merge_size", "stage", stage, float64(bound))
}

// MergeSizes reads the fanout's merge-size histogram of one stage
// ("sequence" or "inbox"): how many observations and their sum.
func (f *Fanout) MergeSizes(stage string) (count uint64, sum float64, err error) {
	return Histogram(f.Registry, "offlinebox_fanout_merge_size", "stage", stage)
}

// Histogram sums the observations of the histogram name in g, over the
// series whose label has the given value (every series when label is "").
func Histogram(g prometheus.Gatherer, name, label, value string) (count uint64, sum float64, err error) {
	err = eachHistogram(g, name, label, value, func(h *dto.Histogram) error {
		count += h.GetSampleCount()
		sum += h.GetSampleSum()
		return nil
	})
	return count, sum, err
}

// HistogramAtMost counts the observations of the histogram name in g at or
// below bound, which must be one of its bucket bounds, over the series
// whose label has the given value (every series when label is "").
func HistogramAtMost(g prometheus.Gatherer, name, label, value string, bound float64) (uint64, error) {
	var count uint64
	err := eachHistogram(g, name, label, value, func(h *dto.Histogram) error {
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() == bound {
				count += b.GetCumulativeCount()
				return nil
			}
		}
		return fmt.Errorf("histogram %s has no bucket of bound %g", name, bound)
	})
	return count, err
}

// eachHistogram calls fn with each series of the histogram name in g whose
// label has the given value (every series when label is "").
func eachHistogram(g prometheus.Gatherer, name, label, value string, fn func(*dto.Histogram) error) error {
	mfs, err := g.Gather()
	if err != nil {
		return fmt.Errorf("gather metrics: %w", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					match = true
				}
			}
			if h := m.GetHistogram(); match && h != nil {
				if err := fn(h); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Produce sends msgs to im.messages keyed by conversation, in order, in
// batches, and waits for the broker's acks.
func Produce(ctx context.Context, cl *kgo.Client, msgs []*schemas.Message) error {
	const batch = 2000
	for start := 0; start < len(msgs); start += batch {
		part := msgs[start:min(start+batch, len(msgs))]
		recs := make([]*kgo.Record, len(part))
		for i, m := range part {
			v, err := proto.Marshal(m)
			if err != nil {
				return fmt.Errorf("encode %s: %w", m.GetClientMsgId(), err)
			}
			recs[i] = &kgo.Record{Topic: schemas.TopicMessages, Key: []byte(m.GetConvId()), Value: v}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("produce %d messages: %w", len(recs), err)
		}
	}
	return nil
}

// NewProducer is a producer client for the stack's brokers.
func NewProducer(st *Stack) (*kgo.Client, error) {
	if len(st.Brokers) == 0 {
		return nil, errors.New("the stack has no Kafka")
	}
	return stream.NewProducer(st.Brokers, kgo.MaxBufferedRecords(100000))
}
