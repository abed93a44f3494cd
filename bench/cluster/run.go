package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/embedded"
)

// result is the run's JSON line.
type result struct {
	OK               bool           `json:"ok"`
	Short            bool           `json:"short"`
	Processes        map[string]int `json:"processes"`
	RedisMasters     int            `json:"redis_masters"`
	RedisReplicas    int            `json:"redis_replicas"`
	Brokers          int            `json:"brokers"`
	Partitions       int            `json:"partitions"`
	ClickHouseShards int            `json:"clickhouse_shards"`
	APINodes         int            `json:"api_nodes"`
	Balancer         string         `json:"balancer"`
	Delivered        int            `json:"delivered"`
	DeliveriesPerSec float64        `json:"deliveries_per_sec"`
	// The probe's figures through the balancer, over every round, the
	// faults' included.
	PushP50MS      float64       `json:"push_p50_ms"`
	PushP99MS      float64       `json:"push_p99_ms"`
	FirstSyncP50MS float64       `json:"first_sync_p50_ms"`
	FirstSyncP99MS float64       `json:"first_sync_p99_ms"`
	ProbeSamples   int           `json:"probe_samples"`
	ProbeErrors    int           `json:"probe_errors"`
	Faults         []faultResult `json:"faults"`
	Baseline       *faultResult  `json:"baseline,omitempty"`
	Capacity       *capacity     `json:"capacity,omitempty"`
	Seconds        float64       `json:"seconds"`
	Error          string        `json:"error,omitempty"`
}

// partitions of every topic: the production count (docker-compose.yml's
// OFFLINEBOX_PARTITIONS default).
const partitions = 8

func run(ctx context.Context, o options, logger *log.Logger) (result, error) {
	start := time.Now()
	res := result{Short: o.short, RedisMasters: o.masters, RedisReplicas: o.masters, Brokers: o.brokers,
		Partitions: partitions, APINodes: o.apis, Balancer: "haproxy"}
	// The servers live until interrupted (-serve outlasts -timeout); the
	// rounds give up after -timeout.
	serveUntil := ctx
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	s, err := startStack(serveUntil, o, logger)
	if s != nil {
		defer s.stop()
		res.Processes = s.counts()
		res.ClickHouseShards = len(s.chShards)
	}
	if err != nil {
		return res, err
	}
	logger.Printf("cluster up in %.1fs: balancer %s, redis %v, brokers %v", time.Since(start).Seconds(), s.lbURL, s.redisAddrs[:o.masters], s.brokers)
	keyring, err := auth.New(auth.Config{Secret: []byte(jwtSecret), TTL: time.Hour})
	if err != nil {
		return res, err
	}
	pr := newProbe(s.lbURL, keyring)
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	go pr.run(pctx, 500*time.Millisecond)
	res.Capacity = &capacity{}
	base, streamed, err := s.rounds(ctx, o, keyring, logger, &res)
	if err != nil {
		return res, err
	}
	pcancel()
	l := pr.result()
	res.PushP50MS, res.PushP99MS, res.FirstSyncP50MS, res.FirstSyncP99MS = l.pushP50, l.pushP99, l.syncP50, l.syncP99
	res.ProbeSamples, res.ProbeErrors = l.samples, l.errs
	if streamed > 0 {
		res.DeliveriesPerSec = float64(res.Delivered) / streamed.Seconds()
	}
	res.OK = (len(res.Faults) > 0 || o.baselineOnly) && base.ok()
	for _, f := range res.Faults {
		res.OK = res.OK && f.ok()
	}
	res.Processes = s.counts()
	if err := s.storedBytes(ctx, res.Capacity); err != nil {
		logger.Printf("capacity: %v", err)
	}
	res.Seconds = time.Since(start).Seconds()
	if o.capacity != "" {
		if err := writeCapacity(o, res); err != nil {
			return res, err
		}
		logger.Printf("wrote %s", o.capacity)
	}
	if o.serve {
		// The result now, for the person who will use the cluster next.
		printResult(o, res)
		logger.Printf("serving: API through the balancer at %s (JWT secret %q, mint tokens with `offlinebox token`); Redis %v; Kafka %v; logs in %s; Ctrl-C stops",
			s.lbURL, jwtSecret, s.redisAddrs, s.brokers, s.dir)
		<-serveUntil.Done()
	}
	return res, nil
}

// rounds streams the workload round after round: the baseline, with no
// fault, which the capacity model measures, then each fault in turn (none
// with -baseline-only). It answers the baseline and the time streamed.
func (s *stack) rounds(ctx context.Context, o options, keyring *auth.Keyring, logger *log.Logger,
	res *result) (base faultResult, streamed time.Duration, err error) {
	memBefore, _ := s.redisSnapshot(ctx)
	if err := s.measureIdle(ctx, keyring, idleConnections, res.Capacity); err != nil {
		return base, 0, err
	}
	m := s.startMeasure(ctx)
	m.memBefore = memBefore
	base = s.round(ctx, o, 0, fault{name: "baseline", apply: noFault}, keyring, logger)
	s.endMeasure(ctx, m, base, res.Capacity)
	res.Baseline = &base
	res.Delivered += base.Delivered
	streamed += o.round
	if o.baselineOnly {
		return base, streamed, nil
	}
	for i, f := range faultsFor(o) {
		fr := s.round(ctx, o, i+1, f, keyring, logger)
		res.Faults = append(res.Faults, fr)
		res.Delivered += fr.Delivered
		streamed += o.round
		if fr.Error != "" {
			logger.Printf("%s: %s", f.name, fr.Error)
		}
	}
	return base, streamed, nil
}

// startStack brings the cluster up: stores, migrate, API nodes, workers.
func startStack(ctx context.Context, o options, logger *log.Logger) (*stack, error) {
	root, err := harness.ModuleRoot()
	if err != nil {
		return nil, err
	}
	dir := o.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "offlinebox-cluster-"); err != nil {
			return nil, err
		}
	}
	s := &stack{dir: dir, prefix: "ob:", chDB: "cluster_bench", workers: map[string][]*proc{}}
	logger.Printf("building ./cmd/offlinebox into %s", dir)
	if s.bin, err = harness.BuildBinary(ctx, root, dir); err != nil {
		return nil, err
	}
	logger.Printf("starting a Redis Cluster of %d masters and %d replicas", o.masters, o.masters)
	if err := s.startRedis(ctx, o.masters); err != nil {
		return s, err
	}
	logger.Printf("starting %d brokers in a process of their own", o.brokers)
	if err := s.startKafka(ctx, o.brokers, partitions); err != nil {
		return s, err
	}
	if err := s.startClickHouse(ctx); err != nil {
		return s, err
	}
	if err := s.migrate(ctx); err != nil {
		return s, err
	}
	logger.Printf("starting %d API nodes behind haproxy and the workers", o.apis)
	if err := s.startAPIs(ctx, o.apis); err != nil {
		return s, err
	}
	return s, s.startWorkers()
}

// chShards is how many clickhouse-server processes hold the history, as
// the shards of the cluster chCluster.
const (
	chShards  = 2
	chCluster = "offlinebox_shards"
)

// startClickHouse starts the history's shards: servers configured as one
// cluster, each with the tables of its own conversations, the processes
// reading and writing through Distributed tables (-clickhouse-cluster).
func (s *stack) startClickHouse(ctx context.Context) error {
	ports, err := embedded.FreePorts(chShards)
	if err != nil {
		return err
	}
	cfg, err := embedded.WriteClickHouseClusterConfig(filepath.Join(s.dir, "clickhouse-etc"), "", chCluster, ports)
	if err != nil {
		return err
	}
	var addrs []string
	for i, port := range ports {
		p, err := embedded.StartClickHouse(ctx, embedded.ClickHouseOptions{
			Dir: filepath.Join(s.dir, fmt.Sprint("clickhouse-", i)), TCPPort: port, ConfigFile: cfg, StopGrace: 10 * time.Second})
		if err != nil {
			return err
		}
		s.chShards = append(s.chShards, p)
		addrs = append(addrs, p.Addr())
	}
	s.chAddr, s.chCluster = strings.Join(addrs, ","), chCluster
	return nil
}

// workerKinds are the workers and how many of each run, as in
// docker-compose.yml; expiry also runs the device census.
var workerKinds = []struct {
	kind string
	n    int
}{{"fanout", 2}, {"push", 2}, {"convindex", 2}, {"history", 2}, {"expiry", 1}}

func (s *stack) startWorkers() error {
	for _, w := range workerKinds {
		for i := range w.n {
			var args []string
			if w.kind != "expiry" { // expiry is in no consumer group
				args = []string{"-session-timeout", "6s"}
			}
			p, err := s.run(w.kind, fmt.Sprintf("%s-%d", w.kind, i), args...)
			if err != nil {
				return err
			}
			s.workers[w.kind] = append(s.workers[w.kind], p)
		}
	}
	return nil
}

// counts are the running processes by kind.
func (s *stack) counts() map[string]int {
	c := map[string]int{}
	for _, p := range s.all {
		if p.Running() {
			c[p.kind]++
		}
	}
	for _, n := range s.redis {
		if n.Pid() != 0 {
			c["redis"]++
		}
	}
	for _, p := range s.chShards {
		if p.Pid() != 0 {
			c["clickhouse"]++
		}
	}
	return c
}
