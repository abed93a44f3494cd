package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/offlinebox/offlinebox/backoff"
	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/stream"
	"github.com/offlinebox/offlinebox/topology"
)

// newRegistry is a Prometheus registry with the process and Go collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// redisDial is every process's Redis client settings, where the address
// (a redis:// URL's parameters) leaves them unset.
var redisDial = redisstore.DialOptions{DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second,
	WriteTimeout: 5 * time.Second, PoolSize: 64}

// openRedis connects to the configured Redis (-redis) and waits until it
// answers: a store that is down is waited for.
func openRedis(ctx context.Context, c *stackConfig) (redis.UniversalClient, error) {
	return dialRedis(ctx, c, "redis", c.Redis)
}

// dialRedis connects to the Redis at addr, which flag set, by
// redisstore.ParseAddr's rule, and waits until it answers.
func dialRedis(ctx context.Context, c *stackConfig, flag, addr string) (redis.UniversalClient, error) {
	a, err := redisstore.ParseAddr(addr, c.RedisCluster)
	if err != nil {
		return nil, fmt.Errorf("-%s: %w", flag, err)
	}
	rdb := a.Dial(redisDial)
	if err := waitFor(ctx, c, flag, addr, flag, func(ctx context.Context) error { return rdb.Ping(ctx).Err() }); err != nil {
		_ = rdb.Close()
		return nil, err
	}
	return rdb, nil
}

func storeConfig(c *stackConfig) redisstore.Config {
	return redisstore.Config{Prefix: c.Prefix}
}

func openStore(ctx context.Context, c *stackConfig) (*redisstore.Store, error) {
	return openStoreAt(ctx, c, "redis", c.Redis)
}

// openHotStore opens the hot Redis (-hot-redis), where hot users' keys
// live; it is dialed once per process, and the API, convindex and fanout
// all use it.
func openHotStore(ctx context.Context, c *stackConfig) (*redisstore.Store, error) {
	return openStoreAt(ctx, c, "hot-redis", c.HotRedis)
}

func openStoreAt(ctx context.Context, c *stackConfig, flag, addr string) (*redisstore.Store, error) {
	rdb, err := dialRedis(ctx, c, flag, addr)
	if err != nil {
		return nil, err
	}
	st, err := redisstore.New(rdb, storeConfig(c))
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	return st, nil
}

// openClickHouse opens the history store and waits until it answers.
func openClickHouse(ctx context.Context, c *stackConfig) (*chstore.Store, error) {
	ch, err := chstore.Open(ctx, chstore.Config{
		Addr: c.ClickHouse, Database: c.ClickHouseDB, Username: c.ClickHouseUser, Password: c.ClickHousePass,
		Cluster: c.ClickHouseCluster,
		Logger:  slog.Default(),
	})
	if err != nil {
		return nil, fmt.Errorf("open clickhouse %s: %w", c.ClickHouse, err)
	}
	// Before the first migration the database does not exist yet; the
	// server answering that is up.
	up := func(ctx context.Context) error {
		err := ch.Ping(ctx)
		var ex *clickhouse.Exception
		if errors.As(err, &ex) && ex.Code == chUnknownDatabase {
			return nil
		}
		return err
	}
	if err := waitFor(ctx, c, "clickhouse", c.ClickHouse, "clickhouse", up); err != nil {
		_ = ch.Close()
		return nil, err
	}
	return ch, nil
}

// chUnknownDatabase is ClickHouse's error code UNKNOWN_DATABASE.
const chUnknownDatabase = 81

// storeRetry paces waitFor's attempts.
var storeRetry = backoff.Policy{Min: 200 * time.Millisecond, Max: 5 * time.Second}

// waitFor retries check with backoff until it succeeds, ctx ends, or
// c.StoreWait (when set) passed; each attempt has its own timeout. A tool
// with a StoreWait gives up with one error naming the store, its address
// and where that address came from, and logs nothing while it waits.
func waitFor(ctx context.Context, c *stackConfig, what, addr, flag string, check func(context.Context) error) error {
	if c.StoreWait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.StoreWait)
		defer cancel()
	}
	attempt := func(ctx context.Context) error {
		actx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		return check(actx)
	}
	err := backoff.RetryWait(ctx, storeRetry, attempt, func(n int, err error, wait time.Duration) {
		if c.StoreWait == 0 {
			slog.Warn("waiting for a store", "store", what, "addr", addr, "attempt", n,
				"backoff", wait.Round(time.Millisecond), "err", err)
		}
	})
	var gaveUp *backoff.GaveUpError
	if errors.As(err, &gaveUp) {
		if c.StoreWait > 0 && errors.Is(gaveUp.Cause, context.DeadlineExceeded) {
			return &exitError{code: 2, err: fmt.Errorf("cannot reach %s at %s%s within %s: %w", what, addr, c.from(flag), c.StoreWait, gaveUp.Last)}
		}
		return fmt.Errorf("wait for %s at %s: %w (last error: %v)", what, addr, gaveUp.Cause, gaveUp.Last)
	}
	return err
}

// ensureTopics creates the pipeline's topics when missing.
func ensureTopics(ctx context.Context, c *stackConfig) error {
	limit := 30 * time.Second
	if c.StoreWait > 0 {
		limit = c.StoreWait
	}
	actx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	err := stream.EnsureTopics(actx, c.kafkaBrokers(), int32(c.Partitions), topology.Topics()...)
	var dial *net.OpError
	if err != nil && c.StoreWait > 0 && (actx.Err() != nil || errors.As(err, &dial)) {
		return &exitError{code: 2, err: fmt.Errorf("cannot reach kafka at %s%s: %w", c.Kafka, c.from("kafka"), err)}
	}
	return err
}

// workerSpec is one stage of the topology and its handler.
type workerSpec struct {
	stage    topology.Stage
	handler  stream.Handler
	registry prometheus.Registerer
}

// runWorker runs one consumer group until ctx ends; its runner goes to
// slot (nil: none), which readiness reads.
func runWorker(ctx context.Context, c *stackConfig, slot *runnerSlot, w workerSpec) error {
	r, err := newRunner(c, w)
	if err != nil {
		return err
	}
	defer r.Close()
	slot.set(r)
	if err := r.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", w.stage.Group, err)
	}
	return nil
}

// newRunner is the group member of one worker, its metrics registered.
func newRunner(c *stackConfig, w workerSpec) (*stream.Runner, error) {
	cfg := w.stage.RunnerConfig(c.kafkaBrokers())
	if c.SessionTimeout > 0 {
		cfg.ExtraOpts = append(cfg.ExtraOpts, kgo.SessionTimeout(c.SessionTimeout))
	}
	cfg.Logger = slog.Default().With("worker", w.stage.Group)
	cfg.Metrics, cfg.ClientMetrics = w.registry, w.registry != nil
	r, err := stream.New(cfg, w.handler)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", w.stage.Group, err)
	}
	return r, nil
}

// serveHTTP serves h on addr until ctx ends.
func serveHTTP(ctx context.Context, addr string, h http.Handler) error {
	ln, err := listen(addr)
	if err != nil {
		return err
	}
	return serveListener(ctx, ln, h)
}

func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return ln, nil
}

// serveListener serves h on ln until ctx ends, then shuts down gracefully.
func serveListener(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// runTogether runs tasks until all return; the first error cancels the
// others and is returned. A task that ends with ctx's cancellation is no
// error.
func runTogether(ctx context.Context, tasks ...func(context.Context) error) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, t := range tasks {
		g.Go(func() error {
			if err := t(ctx); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		})
	}
	return g.Wait()
}
