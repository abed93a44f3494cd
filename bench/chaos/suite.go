package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/bench/checker"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/embedded"
	"github.com/offlinebox/offlinebox/schemas"
)

// options are the suite's knobs (flags of the program).
type options struct {
	scale     float64
	outage    time.Duration
	scenarios []string
	seed      int64
	dir       string
	keep      bool
	// duration of each scenario's stream (from scale).
	duration time.Duration
	// logger receives the in-process stages' and the API's logs (quiet
	// when nil).
	logger *slog.Logger
}

// suite is the servers every scenario shares: one redis-server with the
// append-only file, one clickhouse-server, the offlinebox binary.
type suite struct {
	opts     options
	dir      string
	bin      string
	redis    *embedded.Process
	ch       *embedded.Process
	log      *harness.Log
	life     context.CancelFunc
	workload *checker.Workload
}

func startSuite(ctx context.Context, o options, log *harness.Log) (*suite, error) {
	s := &suite{opts: o, log: log}
	if err := s.start(ctx); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *suite) start(ctx context.Context) error {
	var err error
	if s.dir, err = os.MkdirTemp(s.opts.dir, "offlinebox-chaos-"); err != nil {
		return err
	}
	root, err := harness.ModuleRoot()
	if err != nil {
		return err
	}
	s.log.Printf("building ./cmd/offlinebox")
	if s.bin, err = harness.BuildBinary(ctx, root, s.dir); err != nil {
		return err
	}
	life, cancel := context.WithCancel(context.Background())
	s.life = cancel
	if s.redis, err = embedded.StartRedis(life, embedded.RedisOptions{Dir: filepath.Join(s.dir, "redis"),
		AppendOnly: true, AppendFsync: "everysec", Args: []string{"--maxmemory-policy", "noeviction"}}); err != nil {
		return err
	}
	s.log.Printf("redis-server on %s (AOF, fsync every second)", s.redis.Addr())
	s.log.Printf("starting clickhouse-server")
	if s.ch, err = embedded.StartClickHouse(life, embedded.ClickHouseOptions{Dir: filepath.Join(s.dir, "clickhouse")}); err != nil {
		return err
	}
	s.log.Printf("clickhouse-server on %s", s.ch.Addr())
	return nil
}

func (s *suite) stop() {
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if s.ch != nil {
		_ = s.ch.Stop(stopCtx)
	}
	if s.redis != nil {
		_ = s.redis.Stop(stopCtx)
	}
	if s.life != nil {
		s.life()
	}
	if s.dir != "" && !s.opts.keep {
		_ = os.RemoveAll(s.dir)
	}
}

// workloadConfig is the traffic of one scenario at the suite's scale.
func (s *suite) workloadConfig(name string) (checker.Config, checker.Behaviour) {
	sc := s.opts.scale
	w := checker.Config{Seed: s.opts.seed + int64(len(name)), Users: max(6, int(24*sc)), DevicesPerUser: 2,
		Directs: max(4, int(16*sc)), Groups: max(3, int(6*sc)), GroupSize: max(4, int(8*sc)),
		LargeGroupSize: 2001, Messages: max(200, int(3000*sc)), APIMessages: max(20, int(120*sc)),
		MentionPercent: 10, ResendPercent: 5, QoS0Percent: 3, Joins: max(2, int(6*sc)), Leaves: max(2, int(4*sc))}
	b := checker.Behaviour{OfflineMax: 800 * time.Millisecond, CrashBeforeStorePercent: 5, CrashBeforeAckPercent: 10,
		ServerCursorPercent: 10, ResendPercent: 20, ReadPercent: 20}
	return w, b
}

// replay produces items again, as they were, and waits for the broker.
func replay(ctx context.Context, e *env, items []checker.Item) (int, error) {
	var recs []*kgo.Record
	for _, it := range items {
		if it.Msg == nil {
			continue
		}
		v, err := proto.Marshal(it.Msg)
		if err != nil {
			return 0, err
		}
		recs = append(recs, &kgo.Record{Topic: schemas.TopicMessages, Key: []byte(it.Msg.GetConvId()), Value: v})
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := e.prod.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		return 0, fmt.Errorf("replay %d records: %w", len(recs), err)
	}
	return len(recs), nil
}
