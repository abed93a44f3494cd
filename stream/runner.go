package stream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrClosed is returned by Run on a Runner that was closed, or whose client
// was closed under it.
var ErrClosed = errors.New("stream runner closed")

// ErrAlreadyRun is returned by a second call of Run.
var ErrAlreadyRun = errors.New("stream runner already run")

// Runner is one member of a consumer group that feeds a Handler. Create it
// with New, call Run once, and Close it.
type Runner struct {
	cfg     Config
	handler Handler
	m       *metrics
	cl      *kgo.Client
	state   *offsetState
	ready   readiness

	// abort is closed when a rebalance is waiting for the batch in flight:
	// retries stop between attempts so that the group is not held up by a
	// partition whose store is down. Nil between batches.
	abortMu sync.Mutex
	abort   chan struct{}

	ran         atomic.Bool
	stopCtx     context.Context // cancelled by Close: ends Run like its own ctx
	stop        context.CancelFunc
	runDone     chan struct{} // closed when Run returns
	closeClient sync.Once
}

// New validates cfg, registers the metrics and creates the group client. The
// client joins the group in the background; records flow once Run is called.
func New(cfg Config, handler Handler) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if handler == nil {
		return nil, fmt.Errorf("%w: handler is nil", ErrInvalidConfig)
	}
	cfg = cfg.withDefaults()
	m, err := newMetrics(cfg.Metrics, cfg.Group)
	if err != nil {
		return nil, fmt.Errorf("stream group %s: %w", cfg.Group, err)
	}
	r := &Runner{
		cfg:     cfg,
		handler: handler,
		m:       m,
		state:   newOffsetState(),
		runDone: make(chan struct{}),
	}
	r.stopCtx, r.stop = context.WithCancel(context.Background())
	r.cl, err = kgo.NewClient(r.clientOpts()...)
	if err != nil {
		r.stop()
		return nil, fmt.Errorf("stream group %s: new kafka client: %w", cfg.Group, err)
	}
	return r, nil
}

func (r *Runner) clientOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(r.cfg.Brokers...),
		kgo.ClientID(r.cfg.ClientID),
		kgo.ConsumerGroup(r.cfg.Group),
		kgo.ConsumeTopics(r.cfg.Topics...),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		// A new group, or a committed offset that fell out of retention,
		// starts at the oldest record: nothing is skipped.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsRevoked(r.onRevoked),
		kgo.OnPartitionsLost(r.onLost),
		kgo.OnPartitionsAssigned(r.onAssigned),
		kgo.OnPartitionsCallbackBlocked(r.onBlocked),
		// Dead letters are produced by the same client, idempotently and
		// acknowledged by all in-sync replicas (franz-go's defaults).
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(r.cfg.ProduceTimeout),
		kgo.WithLogger(kgoLogger{log: r.cfg.Logger.With("group", r.cfg.Group), level: kgo.LogLevelWarn}),
	}
	if r.cfg.Metrics != nil && r.cfg.ClientMetrics {
		opts = append(opts, ClientMetrics(r.cfg.Metrics, r.cfg.Group))
	}
	return append(opts, r.cfg.ExtraOpts...)
}

// Run consumes until ctx is cancelled or Close is called, then finishes the
// batch in flight (the Handle calls running now complete; failed ones are
// not retried), commits what is finished, leaves the group and returns nil.
// It returns an error only if it cannot run at all.
func (r *Runner) Run(ctx context.Context) error {
	if !r.ran.CompareAndSwap(false, true) {
		return ErrAlreadyRun
	}
	defer close(r.runDone)
	if r.stopCtx.Err() != nil {
		return ErrClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(r.stopCtx, cancel)()

	log := r.cfg.Logger.With("group", r.cfg.Group)
	log.Info("stream runner started", "topics", r.cfg.Topics)
	var lag sync.WaitGroup
	if r.cfg.Metrics != nil && r.cfg.LagInterval > 0 {
		lag.Go(func() { r.lagLoop(ctx) })
	}
	err := r.loop(ctx)
	r.ready.joined.Store(false)
	r.ready.lastPoll.Store(0)
	cancel()
	lag.Wait()
	r.shutdownClient()
	log.Info("stream runner stopped")
	return err
}

// loop polls and handles batches until ctx ends.
func (r *Runner) loop(ctx context.Context) error {
	nextCommit := time.Now().Add(r.cfg.CommitInterval)
	for ctx.Err() == nil {
		abort := r.armAbort()
		r.ready.lastPoll.Store(time.Now().UnixNano())
		// The deadline wakes an idle poll so that finished offsets are
		// committed even when no further records arrive.
		pollCtx, cancelPoll := context.WithDeadline(ctx, nextCommit)
		fetches := r.cl.PollRecords(pollCtx, r.cfg.MaxPollRecords)
		cancelPoll()
		if fetches.IsClientClosed() {
			return ErrClosed
		}
		r.logFetchErrors(fetches)
		if batches := splitByPartition(fetches); len(batches) > 0 && ctx.Err() == nil {
			r.handleBatches(ctx, abort, batches)
		}
		if now := time.Now(); !now.Before(nextCommit) || ctx.Err() != nil {
			r.commit()
			nextCommit = now.Add(r.cfg.CommitInterval)
		}
		r.disarmAbort()
		r.cl.AllowRebalance()
	}
	return nil
}

// handleBatches handles each partition's records in a goroutine of its own,
// waits for all, and marks the finished ones. A partition that did not
// finish is rewound to its batch's first record, so that the next poll
// returns the same records again (if the partition is still ours after the
// rebalance that interrupted it).
func (r *Runner) handleBatches(ctx context.Context, abort <-chan struct{}, batches []partitionBatch) {
	done := make([]bool, len(batches))
	var wg sync.WaitGroup
	for i := range batches {
		wg.Go(func() { done[i] = r.handlePartition(ctx, abort, batches[i]) })
	}
	wg.Wait()

	var rewind map[string]map[int32]kgo.EpochOffset
	for i, b := range batches {
		last := b.records[len(b.records)-1]
		if done[i] {
			r.state.finish(b.tp, kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1})
			continue
		}
		if ctx.Err() != nil {
			continue // leaving the group: the next owner starts at the commit
		}
		if rewind == nil {
			rewind = make(map[string]map[int32]kgo.EpochOffset)
		}
		if rewind[b.tp.topic] == nil {
			rewind[b.tp.topic] = make(map[int32]kgo.EpochOffset)
		}
		// Epoch -1: the offset is one we fetched ourselves, no truncation
		// check is needed to resume there.
		rewind[b.tp.topic][b.tp.partition] = kgo.EpochOffset{Epoch: -1, Offset: b.records[0].Offset}
	}
	if rewind != nil {
		r.cl.SetOffsets(rewind)
	}
}

// commit commits the finished offsets; a failure leaves them pending.
func (r *Runner) commit() {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.CommitTimeout)
	defer cancel()
	if err := r.state.commit(ctx, r.cl); err != nil {
		r.m.commitFailed.Inc()
		r.cfg.Logger.Warn("commit offsets failed; they stay pending", "group", r.cfg.Group, "err", err)
	}
}

func (r *Runner) logFetchErrors(fetches kgo.Fetches) {
	fetches.EachError(func(topic string, partition int32, err error) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return // our own poll deadline or shutdown
		}
		r.cfg.Logger.Warn("fetch failed", "group", r.cfg.Group, "topic", topic, "partition", partition, "err", err)
	})
}

// Close stops Run as its ctx would (waiting for it to return) and closes
// the client, leaving the group. It is safe to call more than once and
// without Run, but not from inside a Handler.
func (r *Runner) Close() {
	r.stop()
	if r.ran.Load() {
		<-r.runDone
	}
	r.shutdownClient()
}

// shutdownClient closes the client once. franz-go's Close leaves the
// group, which runs onRevoked: the final commit.
func (r *Runner) shutdownClient() {
	r.closeClient.Do(func() {
		r.commit()
		r.cl.Close()
	})
}
