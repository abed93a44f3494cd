package checker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/stream"
)

// RunConfig is one run of a workload against a live system.
type RunConfig struct {
	Workload *Workload
	// Brokers of the Kafka the pipeline consumes.
	Brokers []string
	// APIURL is the base URL of the HTTP API (http://127.0.0.1:PORT).
	APIURL string
	// Token mints a bearer token of user pinned to device.
	Token func(user, device string) (string, error)
	// Duration over which the stream is produced.
	Duration  time.Duration
	Behaviour Behaviour
	// Drain returns once the pipeline handled everything produced (see
	// WaitCaughtUp); the final catch-up of every device follows.
	Drain func(ctx context.Context) error
	// MaxBody is the fanout's body limit (0: the default).
	MaxBody int
	// HTTP is the devices' client (one with a 20 s timeout when nil).
	HTTP *http.Client
	// Logf prints progress (nothing when nil).
	Logf func(format string, args ...any)
	// LiveURLs, when set, keep every device on the live channel of these
	// API nodes (device i starts on node i mod n and moves to the next
	// when its connection drops) instead of syncing in sessions.
	LiveURLs []string
	// StreamProducerOpts, when set, produce the stream (not the setup)
	// through a client of its own with these options: another
	// partitioner, as a producer written in another language uses.
	StreamProducerOpts []kgo.Opt
}

// Run is a workload being played: the stream produced, devices online and
// offline. Finish stops it and accounts.
type Run struct {
	cfg      RunConfig
	producer *kgo.Client
	devices  []*device
	produced atomic.Int64
	retries  atomic.Int64
	prodErr  chan error
	stop     chan struct{}
	wg       sync.WaitGroup
	cancel   context.CancelFunc
}

// Start produces the setup records, then starts the stream and the
// devices; it returns at once.
func Start(ctx context.Context, cfg RunConfig) (*Run, error) {
	if cfg.Workload == nil || len(cfg.Brokers) == 0 || cfg.APIURL == "" || cfg.Token == nil || cfg.Drain == nil {
		return nil, errors.New("checker: Workload, Brokers, APIURL, Token and Drain are required")
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	}
	cfg.Behaviour = cfg.Behaviour.withDefaults()
	r := &Run{cfg: cfg, prodErr: make(chan error, 1), stop: make(chan struct{})}
	var err error
	if r.producer, err = stream.NewProducer(cfg.Brokers); err != nil {
		return nil, err
	}
	if err := r.makeDevices(); err != nil {
		r.producer.Close()
		return nil, err
	}
	recs, err := records(cfg.Workload.Setup)
	if err == nil {
		err = produceAll(ctx, r.producer, recs, &r.retries)
	}
	if err != nil {
		r.producer.Close()
		return nil, fmt.Errorf("checker: setup records: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	streamProd := r.producer
	if len(cfg.StreamProducerOpts) > 0 {
		if streamProd, err = stream.NewProducer(cfg.Brokers, cfg.StreamProducerOpts...); err != nil {
			cancel()
			r.producer.Close()
			return nil, fmt.Errorf("checker: stream producer: %w", err)
		}
	}
	go func() {
		err := paced(runCtx, streamProd, cfg.Workload.Stream, cfg.Duration, &r.produced, &r.retries)
		if streamProd != r.producer {
			streamProd.Close()
		}
		r.prodErr <- err
	}()
	for i, d := range r.devices {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if len(cfg.LiveURLs) > 0 {
				d.liveLoop(runCtx, r.stop, cfg.LiveURLs, i)
				return
			}
			d.live(runCtx, r.stop)
		}()
	}
	cfg.Logf("traffic: %d setup and %d stream records over %s, %d devices", len(cfg.Workload.Setup),
		len(cfg.Workload.Stream), cfg.Duration, len(r.devices))
	return r, nil
}

func (r *Run) makeDevices() error {
	w := r.cfg.Workload
	perUser := map[string][]*device{}
	for i, dv := range w.Devices {
		tok, err := r.cfg.Token(dv.User, dv.ID)
		if err != nil {
			return fmt.Errorf("checker: token of %s/%s: %w", dv.User, dv.ID, err)
		}
		d := &device{Device: dv, cl: client.New(r.cfg.APIURL, tok, r.cfg.HTTP), st: newLocalStore(),
			rng: rand.New(rand.NewPCG(uint64(w.Config.Seed), uint64(i))), b: r.cfg.Behaviour}
		r.devices = append(r.devices, d)
		perUser[dv.User] = append(perUser[dv.User], d)
	}
	for user, msgs := range w.API {
		ds := perUser[user]
		for i, m := range msgs {
			d := ds[i%len(ds)]
			d.outbox = append(d.outbox, m)
		}
	}
	return nil
}

// Produced is the share of the stream the broker has taken, 0 to 1.
func (r *Run) Produced() float64 {
	n := len(r.cfg.Workload.Stream)
	if n == 0 {
		return 1
	}
	return float64(r.produced.Load()) / float64(n)
}

// ProduceRetries counts records the broker refused and that were sent
// again.
func (r *Run) ProduceRetries() int64 { return r.retries.Load() }

// WaitProduced waits until share of the stream is produced.
func (r *Run) WaitProduced(ctx context.Context, share float64) error {
	for r.Produced() < share {
		if err := harness.Sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// Finish waits for the stream, lets every device send what it still has
// to send, drains the pipeline, runs every device's final catch-up and
// accounts. The report is returned also when some device's catch-up
// failed (what it lacks counts as lost).
func (r *Run) Finish(ctx context.Context) (*Report, error) {
	defer r.producer.Close()
	defer r.cancel()
	var prodErr error
	select {
	case prodErr = <-r.prodErr:
	case <-ctx.Done():
		prodErr = ctx.Err()
	}
	close(r.stop)
	r.wg.Wait()
	if prodErr != nil {
		return nil, fmt.Errorf("checker: produce the stream: %w", prodErr)
	}
	r.cfg.Logf("traffic: stream produced (%d records refused and sent again); draining", r.retries.Load())
	if err := r.cfg.Drain(ctx); err != nil {
		return nil, fmt.Errorf("checker: drain: %w", err)
	}
	r.cfg.Logf("traffic: drained; final catch-up of %d devices", len(r.devices))
	r.finalCatchUps(ctx)
	truth, err := ReadTruth(ctx, r.cfg.Brokers, r.cfg.MaxBody)
	if err != nil {
		return nil, err
	}
	return account(truth, r.cfg.Workload, r.devices), nil
}

// finalCatchUps runs the devices' final catch-ups, eight at a time, each
// bounded to two minutes.
func (r *Run) finalCatchUps(ctx context.Context) {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, d := range r.devices {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			dctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			if err := d.finalCatchUp(dctx); err != nil {
				r.cfg.Logf("traffic: %v", err)
			}
		}()
	}
	wg.Wait()
}
