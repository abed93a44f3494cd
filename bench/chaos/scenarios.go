package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offlinebox/offlinebox/bench/checker"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/topology"
)

// scenario is one fault, injected while a checker run is in flight.
type scenario struct {
	name  string
	about string
	// fanouts: fanout processes at the start.
	fanouts int
	// minStream is the shortest stream of the scenario: faults whose
	// recovery takes seconds need traffic still flowing after them.
	minStream time.Duration
	// live: the devices stay on the live channel of two API processes
	// (and a push process) instead of syncing in sessions.
	live bool
	// streamOpts are the options of the stream's producer (none: the
	// pipeline's own, murmur2 partitioner).
	streamOpts []kgo.Opt
	// tune adjusts the workload and device behaviour.
	tune func(w *checker.Config, b *checker.Behaviour)
	// fault breaks the system while traffic flows and returns once it is
	// healed, saying what it did.
	fault func(ctx context.Context, s *suite, e *env, run *checker.Run) (string, error)
}

func scenarios() []scenario {
	return []scenario{
		{name: "baseline", about: "no fault: the yardstick", fanouts: 1,
			fault: func(context.Context, *suite, *env, *checker.Run) (string, error) { return "none", nil }},
		{name: "fanout-kill", about: "kill -9 the fanout process mid-stream, three times, and start it again", fanouts: 1, minStream: 25 * time.Second, fault: killFanout},
		{name: "fanout-rebalance", about: "two fanout processes; each leaves and rejoins in turn, moving partitions back and forth", fanouts: 2, minStream: 8 * time.Second, fault: rebalanceFanouts},
		{name: "redis-restart", about: "restart redis-server (SIGTERM, AOF on) twice while traffic flows", fanouts: 1, fault: restartRedis},
		{name: "redis-tail", about: "snapshot redis-server while traffic flows, run on for a few seconds, kill -9 it and start it from the snapshot: it lost its tail, offsets of which were committed",
			fanouts: 1, minStream: 12 * time.Second, fault: redisLosesTail},
		{name: "clickhouse-outage", about: "stop clickhouse-server for the outage, then start it again; history must hold every message once", fanouts: 1, fault: clickhouseOutage},
		{name: "broker-faults", about: "kfake answers produce, fetch and commit requests with errors and delays for a while", fanouts: 1, fault: brokerFaults},
		{name: "poison", about: "undecodable records in the middle of partitions: dead-lettered with a reason, the rest flows", fanouts: 1,
			tune: func(w *checker.Config, _ *checker.Behaviour) { w.Poison = 6 },
			fault: func(context.Context, *suite, *env, *checker.Run) (string, error) {
				return "6 poison records in the stream", nil
			}},
		{name: "resend", about: "producers and clients resend the same client_msg_id; a producer replays a fifth of the stream", fanouts: 1,
			tune: func(w *checker.Config, b *checker.Behaviour) {
				w.ResendPercent, b.ResendPercent, b.CrashBeforeAckPercent = 30, 60, 25
			},
			fault: replayStream},
		{name: "api-kill-live", about: "devices on the live channel of two API processes; kill -9 one with its connections: they reconnect to the other and catch up",
			fanouts: 1, live: true, minStream: 10 * time.Second, fault: killAPI},
		foreignPartitioner(),
		evictScenario(),
	}
}

// killAPI kills the first API process while its devices are connected.
func killAPI(ctx context.Context, s *suite, e *env, run *checker.Run) (string, error) {
	if err := at(ctx, run, 0.4); err != nil {
		return "", err
	}
	w := e.apis[0]
	w.Kill()
	s.log.Printf("%s: killed %s (-9) with its live connections at %.0f%% of the stream", e.name, w.Name, run.Produced()*100)
	return fmt.Sprintf("killed %s at %.0f%% of the stream", w.Name, run.Produced()*100), nil
}

// at waits until share of the stream is produced, or ctx ends.
func at(ctx context.Context, run *checker.Run, share float64) error {
	return run.WaitProduced(ctx, share)
}

func killFanout(ctx context.Context, s *suite, e *env, run *checker.Run) (string, error) {
	w := e.fanouts[0]
	var notes []string
	for _, share := range []float64{0.2, 0.45, 0.7} {
		if err := at(ctx, run, share); err != nil {
			return "", err
		}
		// Kill while records wait for the worker: it is inside a batch or
		// about to poll one, with work it has not committed.
		before, lag := e.waitLag(ctx)
		w.Kill()
		s.log.Printf("%s: killed %s (-9) at %.0f%% of the stream, %d records not committed", e.name, w.Name, run.Produced()*100, lag)
		notes = append(notes, fmt.Sprint(lag))
		if err := w.Start(); err != nil {
			return "", err
		}
		// The next kill comes once the new process works: a process killed
		// while still joining proves less and stalls the group.
		if err := e.waitCommitted(ctx, before); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("kill -9 of the fanout process %d times with %s records not committed, restarted at once",
		len(notes), strings.Join(notes, ", ")), nil
}

// waitLag waits (up to 2 s) until the fanout group lags, and returns its
// committed total and lag.
func (e *env) waitLag(ctx context.Context) (committed, lag int64) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		c, end, err := checker.Progress(ctx, e.brokers, topology.GroupFanout, schemas.TopicMessages)
		if err == nil && (end > c || time.Now().After(deadline)) {
			return c, end - c
		}
		if harness.Sleep(ctx, 10*time.Millisecond) != nil {
			return c, end - c
		}
	}
}

// waitCommitted waits until the fanout group commits beyond before, or
// has nothing left to commit.
func (e *env) waitCommitted(ctx context.Context, before int64) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		c, end, err := checker.Progress(ctx, e.brokers, topology.GroupFanout, schemas.TopicMessages)
		if err == nil && (c > before || c == end) {
			return nil
		}
		if err := harness.Sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("fanout group did not commit again after a restart: %w", err)
		}
	}
}

func rebalanceFanouts(ctx context.Context, s *suite, e *env, run *checker.Run) (string, error) {
	moves := 0
	for i := 0; run.Produced() < 0.85 && ctx.Err() == nil; i++ {
		w := e.fanouts[i%2]
		if err := harness.Sleep(ctx, 1500*time.Millisecond); err != nil {
			return "", err
		}
		if i == 3 {
			w.Kill() // one leaves without a word: its session must expire
		} else {
			w.Stop(20 * time.Second)
		}
		moves++
		if err := harness.Sleep(ctx, 1500*time.Millisecond); err != nil {
			return "", err
		}
		if err := w.Start(); err != nil {
			return "", err
		}
		moves++
	}
	s.log.Printf("%s: %d membership changes of the fanout group", e.name, moves)
	return fmt.Sprintf("%d leaves and rejoins of two fanout processes (one kill -9)", moves), nil
}

func restartRedis(ctx context.Context, s *suite, e *env, run *checker.Run) (string, error) {
	for _, share := range []float64{0.35, 0.7} {
		if err := at(ctx, run, share); err != nil {
			return "", err
		}
		start := time.Now()
		if err := s.redis.Restart(ctx); err != nil {
			return "", fmt.Errorf("restart redis: %w", err)
		}
		s.log.Printf("%s: redis-server restarted in %s", e.name, time.Since(start).Round(time.Millisecond))
	}
	return "redis-server restarted twice (SIGTERM, AOF appendfsync everysec)", nil
}

func clickhouseOutage(ctx context.Context, s *suite, e *env, run *checker.Run) (string, error) {
	if err := at(ctx, run, 0.25); err != nil {
		return "", err
	}
	if err := s.ch.Stop(ctx); err != nil {
		return "", fmt.Errorf("stop clickhouse: %w", err)
	}
	s.log.Printf("%s: clickhouse-server stopped for %s", e.name, s.opts.outage)
	if err := harness.Sleep(ctx, s.opts.outage); err != nil {
		return "", err
	}
	if err := s.ch.Restart(ctx); err != nil {
		return "", fmt.Errorf("start clickhouse again: %w", err)
	}
	s.log.Printf("%s: clickhouse-server is back", e.name)
	return fmt.Sprintf("clickhouse-server stopped for %s", s.opts.outage), nil
}

// brokerFaults fails a share of produce, fetch and offset-commit requests
// and delays others, for a window in the middle of the stream.
func brokerFaults(ctx context.Context, s *suite, e *env, run *checker.Run) (string, error) {
	if err := at(ctx, run, 0.2); err != nil {
		return "", err
	}
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(uint64(s.opts.seed), 7))
	chance := func(p int) func(kmsg.Request) bool {
		return func(kmsg.Request) bool { mu.Lock(); defer mu.Unlock(); return rng.IntN(100) < p }
	}
	h := e.kafka.Fault(
		kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotLeaderForPartition, Count: -1, When: chance(15)},
		kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.RequestTimedOut, Count: -1, When: chance(10)},
		kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Err: kerr.NotLeaderForPartition, Count: -1, When: chance(15)},
		kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Err: kerr.CoordinatorNotAvailable, Count: -1, When: chance(30)},
	)
	var slowOn sync.Mutex
	active := true
	slow := func(key int16, p int, d time.Duration) {
		e.kafka.ControlKey(key, func(kmsg.Request) (kmsg.Response, error, bool) {
			e.kafka.KeepControl()
			slowOn.Lock()
			on := active
			slowOn.Unlock()
			if !on {
				e.kafka.DropControl()
				return nil, nil, false
			}
			if chance(p)(nil) {
				e.kafka.SleepControl(func() { time.Sleep(d) })
			}
			return nil, nil, false
		})
	}
	slow(int16(kmsg.Produce), 20, 300*time.Millisecond)
	slow(int16(kmsg.Fetch), 20, 400*time.Millisecond)
	window := max(3*time.Second, s.opts.duration/3)
	s.log.Printf("%s: broker faults on for %s", e.name, window)
	err := harness.Sleep(ctx, window)
	h.Remove()
	slowOn.Lock()
	active = false
	slowOn.Unlock()
	s.log.Printf("%s: broker faults off: %d requests failed", e.name, h.Hits())
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d produce/fetch/commit requests failed, 20%% of produce and fetch delayed 300-400 ms, for %s", h.Hits(), window), nil
}

// replayStream produces the first fifth of the stream again at half-time,
// as a producer restarted from an old checkpoint would.
func replayStream(ctx context.Context, s *suite, e *env, run *checker.Run) (string, error) {
	if err := at(ctx, run, 0.5); err != nil {
		return "", err
	}
	items := s.workload.Stream[:len(s.workload.Stream)/5]
	n, err := replay(ctx, e, items)
	if err != nil {
		return "", err
	}
	s.log.Printf("%s: replayed %d records", e.name, n)
	return fmt.Sprintf("%d records of the stream produced a second time at half-time; resends by producers and devices", n), nil
}
