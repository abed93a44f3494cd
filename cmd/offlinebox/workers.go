package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/api"
	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/retention"
	"github.com/offlinebox/offlinebox/seal"
	"github.com/offlinebox/offlinebox/stream"
	"github.com/offlinebox/offlinebox/topology"
	"github.com/offlinebox/offlinebox/web"
	"github.com/offlinebox/offlinebox/workers/census"
	"github.com/offlinebox/offlinebox/workers/convindex"
	"github.com/offlinebox/offlinebox/workers/expiry"
	"github.com/offlinebox/offlinebox/workers/fanout"
	"github.com/offlinebox/offlinebox/workers/history"
	"github.com/offlinebox/offlinebox/workers/push"
)

// parseStack parses a subcommand's flags into a stackConfig: the stack
// flags it reads (stackUses), the log flags, and its own (extra).
func parseStack(name string, args []string, extra func(fs *flag.FlagSet)) (*stackConfig, *flag.FlagSet, error) {
	return parseStackUsage(name, "[flags]", args, extra)
}

// parseStackUsage is parseStack with the synopsis -h prints after the
// subcommand's name.
func parseStackUsage(name, synopsis string, args []string, extra func(fs *flag.FlagSet)) (*stackConfig, *flag.FlagSet, error) {
	fs := newFlagSet(name, synopsis)
	c := &stackConfig{}
	all := stackFlags(name, c, fs)
	var lo logOptions
	lo.bind(fs)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if err := lo.apply(os.Stderr); err != nil {
		return nil, nil, err
	}
	src, err := loadSources()
	if err != nil {
		return nil, nil, err
	}
	if err := c.resolve(all, fs, src); err != nil {
		return nil, nil, err
	}
	return c, fs, nil
}

// parseServer parses and validates a server subcommand's flags; servesAPI says
// the process serves the API (its secret is then required).
func parseServer(name string, args []string, servesAPI bool) (*stackConfig, error) {
	c, _, err := parseStack(name, args, nil)
	if err != nil {
		return nil, err
	}
	if err := c.validate(servesAPI); err != nil {
		return nil, err
	}
	return c, nil
}

// openServer serves a server process's health and metrics, then opens
// what n names with its components registering on those metrics. The
// caller closes the processes.
func openServer(ctx context.Context, c *stackConfig, n needs) (*health, *processes, error) {
	h, reg := newHealth(), newRegistry()
	serveProcess(ctx, c.MetricsListen, reg, h)
	p, err := openWith(ctx, c, n, reg)
	if err != nil {
		return nil, nil, err
	}
	return h, p, nil
}

// processes holds what one process opened, for the workers it runs.
type processes struct {
	cfg      *stackConfig
	registry *prometheus.Registry
	// metrics is where components register: the registry, or a test's
	// recorder in front of it.
	metrics  prometheus.Registerer
	rdb      redis.UniversalClient
	store    *redisstore.Store
	hot      *redisstore.Store
	ch       *chstore.Store
	producer *kgo.Client
	// policies is the retention policy file in force (nil: built-in).
	policies *retention.Source
	// sealer seals and opens bodies (nil: bodies in the clear).
	sealer *seal.Sealer
}

func (p *processes) close() {
	if p.producer != nil {
		p.producer.Close()
	}
	if p.ch != nil {
		_ = p.ch.Close()
	}
	if p.hot != nil {
		_ = p.hot.Client().Close()
	}
	if p.rdb != nil {
		_ = p.rdb.Close()
	}
}

type needs struct{ redis, clickhouse, producer bool }

func open(ctx context.Context, c *stackConfig, n needs) (*processes, error) {
	return openWith(ctx, c, n, newRegistry())
}

// openWith is open registering on reg, which the process may serve
// before the stores answer.
func openWith(ctx context.Context, c *stackConfig, n needs, reg *prometheus.Registry) (*processes, error) {
	p := &processes{cfg: c, registry: reg}
	p.metrics = p.registry
	var ring *seal.FileRing
	if n.redis {
		st, err := openStore(ctx, c)
		if err != nil {
			return nil, err
		}
		p.store, p.rdb = st, st.Client()
		if ring, err = checkSealing(ctx, c, st); err != nil {
			p.close()
			return nil, err
		}
		// A sealing process keeps its data keys durable in ClickHouse
		// too: a key Redis lost is taken back from there, never made anew.
		n.clickhouse = n.clickhouse || ring != nil
	}
	if n.clickhouse {
		ch, err := openClickHouse(ctx, c)
		if err != nil {
			p.close()
			return nil, err
		}
		p.ch = ch
	}
	if n.redis {
		if ring != nil {
			// data_keys must exist before the first key is looked up there
			if err := p.ch.Migrate(ctx); err != nil {
				p.close()
				return nil, err
			}
			p.sealer = seal.NewSealer(ring, seal.Layered{Primary: p.store, Durable: p.ch}, 0)
			// the same client; this store seals what it writes
			var err error
			if p.store, err = redisstore.New(p.rdb, p.storeConfig()); err != nil {
				p.close()
				return nil, err
			}
		}
		if c.HotRedis != "" {
			hot, err := openHotStore(ctx, c)
			if err != nil {
				p.close()
				return nil, fmt.Errorf("hot redis: %w", err)
			}
			p.hot = hot
		}
	}
	if n.producer {
		prod, err := stream.NewProducer(c.kafkaBrokers(), kgo.WithLogger(stream.KgoLogger(slog.Default().With("component", "producer"))),
			stream.ClientMetrics(p.metrics, "producer"))
		if err != nil {
			p.close()
			return nil, err
		}
		p.producer = prod
	}
	return p, nil
}

// storeConfig is the store configuration, sealing when a key ring is.
func (p *processes) storeConfig() redisstore.Config {
	sc := storeConfig(p.cfg)
	if p.sealer != nil {
		sc.Sealer = p.sealer
	}
	return sc
}

// hotClient is the hot Redis's client, nil without one.
func (p *processes) hotClient() redis.UniversalClient {
	if p.hot == nil {
		return nil
	}
	return p.hot.Client()
}

func (p *processes) router() *redisstore.InboxRouter {
	return redisstore.NewInboxRouter(p.store, p.hot, 0)
}

func (p *processes) fanoutWorker() (workerSpec, func(), error) {
	stage := topology.Fanout()
	f, err := fanout.New(fanout.Config{
		Store: p.storeConfig(), SequencedTopic: stage.Outputs[0], Brokers: p.cfg.kafkaBrokers(),
		HotRedis: p.hotClient(), HotRoute: p.hot != nil,
		Logger: slog.Default().With("worker", "fanout"), Metrics: p.metrics,
	}, p.rdb, p.producer)
	if err != nil {
		return workerSpec{}, nil, err
	}
	return workerSpec{stage: stage, handler: f, registry: p.metrics}, f.Close, nil
}

func (p *processes) convindexWorker() (workerSpec, error) {
	ix, err := convindex.New(convindex.Config{Logger: slog.Default().With("worker", "convindex"), Metrics: p.metrics}, p.router())
	if err != nil {
		return workerSpec{}, err
	}
	return workerSpec{stage: topology.Convindex(), handler: ix, registry: p.metrics}, nil
}

// workerTasks gives every one of specs a task of its own; each worker's
// group is part of h's readiness from now on.
func workerTasks(c *stackConfig, h *health, specs []workerSpec) []func(context.Context) error {
	tasks := make([]func(context.Context) error, len(specs))
	for i, spec := range specs {
		ready := h.slot("group " + spec.stage.Group)
		tasks[i] = func(ctx context.Context) error { return runWorker(ctx, c, ready, spec) }
	}
	return tasks
}

// pushWorkers ring the API nodes holding recipients' live connections:
// the main group, the QoS 0 records' and the one that tells senders of
// refused records.
func (p *processes) pushWorkers() ([]workerSpec, error) {
	cfg := push.Config{Store: storeConfig(p.cfg), BusFormat: live.Format(p.cfg.LiveBusFormat),
		Logger: slog.Default().With("worker", "push"), Metrics: p.registry}
	pw, err := push.New(cfg, p.rdb)
	if err != nil {
		return nil, err
	}
	var specs []workerSpec
	for _, s := range topology.PushStages() {
		specs = append(specs, workerSpec{stage: s, handler: pw, registry: p.registry})
	}
	return specs, nil
}

func (p *processes) historyWorker() (workerSpec, error) {
	h, err := history.New(history.Config{Logger: slog.Default().With("worker", "history"), Metrics: p.metrics}, p.ch)
	if err != nil {
		return workerSpec{}, err
	}
	return workerSpec{stage: topology.History(), handler: h, registry: p.metrics}, nil
}

// expiryWorkers sweeps the main store (and drops old ClickHouse
// partitions) and, when there is one, the hot store.
func (p *processes) expiryWorkers() ([]*expiry.Worker, error) {
	policies := p.policies
	main, err := expiry.New(expiry.Config{Logger: slog.Default().With("worker", "expiry"), Metrics: p.metrics, Policies: policies}, p.store, p.ch)
	if err != nil {
		return nil, err
	}
	workers := []*expiry.Worker{main}
	if p.hot != nil {
		hot, err := expiry.New(expiry.Config{Logger: slog.Default().With("worker", "expiry", "store", "hot"), Policies: policies,
			Metrics: prometheus.WrapRegistererWith(prometheus.Labels{"store": "hot"}, p.metrics)}, p.hot, nil)
		if err != nil {
			return nil, err
		}
		workers = append(workers, hot)
	}
	return workers, nil
}

// censusWorker is the device census (drift, users who stopped pulling).
// It runs with the retention worker: both are paced, bounded scans of the
// store, and one process of them is enough.
func (p *processes) censusWorker() (*census.Worker, error) {
	return census.New(census.Config{DriftThreshold: p.cfg.DriftThreshold, Metrics: p.metrics,
		Logger: slog.Default().With("worker", "census")}, p.router())
}

func (p *processes) apiServer(secret string, h *health) (*api.Server, error) {
	keyring, err := auth.New(auth.Config{Secret: []byte(secret)})
	if err != nil {
		return nil, err
	}
	deps := api.Deps{Router: p.router(), Keyring: keyring, Producer: p.producer,
		Logger: slog.Default().With("component", "api"), Metrics: p.metrics, Ready: h.ready}
	if p.ch != nil {
		deps.History = p.ch
	}
	if p.sealer != nil {
		deps.Opener = p.sealer
	}
	return api.New(api.Config{Live: api.LiveConfig{Node: p.cfg.Node, BusFormat: live.Format(p.cfg.LiveBusFormat)}}, deps)
}

// runOne is the body of the single-worker subcommands.
func runOne(ctx context.Context, name string, args []string, n needs, build func(p *processes) (workerSpec, func(), error)) error {
	c, err := parseServer(name, args, false)
	if err != nil {
		return err
	}
	h, p, err := openServer(ctx, c, n)
	if err != nil {
		return err
	}
	defer p.close()
	if err := ensureTopics(ctx, c); err != nil {
		return err
	}
	w, closeFn, err := build(p)
	if err != nil {
		return err
	}
	if closeFn != nil {
		defer closeFn()
	}
	slot := h.slot("group " + w.stage.Group)
	p.addStoreChecks(h)
	h.storesOpened()
	slog.Info("worker started", "worker", name, "kafka", c.Kafka)
	return runWorker(ctx, c, slot, w)
}

func runFanout(ctx context.Context, args []string, _ io.Writer) error {
	return runOne(ctx, "fanout", args, needs{redis: true, producer: true}, (*processes).fanoutWorker)
}

func runConvindex(ctx context.Context, args []string, _ io.Writer) error {
	return runOne(ctx, "convindex", args, needs{redis: true}, func(p *processes) (workerSpec, func(), error) {
		w, err := p.convindexWorker()
		return w, nil, err
	})
}

func runPush(ctx context.Context, args []string, _ io.Writer) error {
	c, err := parseServer("push", args, false)
	if err != nil {
		return err
	}
	h, p, err := openServer(ctx, c, needs{redis: true})
	if err != nil {
		return err
	}
	defer p.close()
	if err := ensureTopics(ctx, c); err != nil {
		return err
	}
	specs, err := p.pushWorkers()
	if err != nil {
		return err
	}
	tasks := workerTasks(c, h, specs)
	p.addStoreChecks(h)
	h.storesOpened()
	slog.Info("worker started", "worker", "push", "kafka", c.Kafka)
	return runTogether(ctx, tasks...)
}

func runHistory(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "sql" {
		return runHistorySQL(ctx, args[1:], stdout)
	}
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprintln(helpOutput, "offlinebox history runs the ClickHouse history sink; `offlinebox history sql -h` for the query tool.")
	}
	return runOne(ctx, "history", args, needs{clickhouse: true}, func(p *processes) (workerSpec, func(), error) {
		if err := p.ch.Migrate(ctx); err != nil {
			return workerSpec{}, nil, err
		}
		w, err := p.historyWorker()
		return w, nil, err
	})
}

func runExpiry(ctx context.Context, args []string, _ io.Writer) error {
	c, err := parseServer("expiry", args, false)
	if err != nil {
		return err
	}
	h, p, err := openPolicyServer(ctx, c, needs{redis: true, clickhouse: true})
	if err != nil {
		return err
	}
	defer p.close()
	workers, err := p.expiryWorkers()
	if err != nil {
		return err
	}
	p.addStoreChecks(h)
	h.storesOpened()
	cw, err := p.censusWorker()
	if err != nil {
		return err
	}
	tasks := []func(context.Context) error{cw.Run, p.watchPolicies}
	for _, w := range workers {
		tasks = append(tasks, w.Run)
	}
	return runTogether(ctx, tasks...)
}

func runAPI(ctx context.Context, args []string, _ io.Writer) error {
	c, err := parseServer("api", args, true)
	if err != nil {
		return err
	}
	h, p, err := openServer(ctx, c, needs{redis: true, clickhouse: true, producer: true})
	if err != nil {
		return err
	}
	defer p.close()
	if err := ensureTopics(ctx, c); err != nil {
		return err
	}
	srv, err := p.apiServer(c.JWTSecret, h)
	if err != nil {
		return err
	}
	defer srv.Close()
	p.addStoreChecks(h)
	h.storesOpened()
	slog.Info("api listening", "addr", c.Listen, "metrics", c.MetricsListen, "node", p.cfg.Node)
	return serveHTTP(ctx, c.Listen, web.Handler(srv.Handler()))
}
