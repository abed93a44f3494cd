package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offlinebox/offlinebox/api"
	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/bench/checker"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/embedded"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/stream"
	"github.com/offlinebox/offlinebox/topology"
	"github.com/offlinebox/offlinebox/workers/convindex"
	"github.com/offlinebox/offlinebox/workers/history"
)

// The stages run as the topology declares them: fanout as processes of the
// binary, convindex and history in this process.
const (
	partitions = 8
	jwtSecret  = "chaos-suite-secret-0123456789abcdef"
)

// env is one scenario's system: its own kfake broker, Redis key prefix and
// ClickHouse database on the suite's servers; convindex, history and the
// API in this process; fanout workers as child processes.
type env struct {
	name    string
	dir     string
	prefix  string
	kafka   *kfake.Cluster
	brokers []string
	rdb     *redis.Client
	store   *redisstore.Store
	ch      *chstore.Store
	stages  []*harness.Stage
	keyring *auth.Keyring
	apiURL  string
	srv     *http.Server
	prod    *kgo.Client
	fanouts []*harness.Proc
	// apis and pusher are the live scenarios' API and push processes;
	// liveURLs the APIs' base URLs.
	apis     []*harness.Proc
	pusher   *harness.Proc
	liveURLs []string
	database string
	chAddr   string
	bin      string
	redis    string
	log      *slog.Logger
	mu       sync.Mutex
	minted   []string
	stopOnce sync.Once
}

// envOptions are the servers and binary a scenario's system runs on.
type envOptions struct {
	name, dir, bin    string
	redisAddr, chAddr string
	fanouts           int
	live              bool
	logger            *slog.Logger
	apiConfig         api.Config
	// prefix and database override the scenario's own names (tests on
	// shared servers).
	prefix, database string
}

func newEnv(ctx context.Context, o envOptions) (*env, error) {
	e := &env{name: o.name, dir: filepath.Join(o.dir, o.name), prefix: "chaos-" + o.name + ":", bin: o.bin,
		redis: o.redisAddr, log: o.logger, chAddr: o.chAddr}
	if e.log == nil {
		e.log = harness.QuietLogger()
	}
	if o.prefix != "" {
		e.prefix = o.prefix
	}
	if o.database == "" {
		o.database = "chaos_" + sanitize(o.name)
	}
	e.database = o.database
	if err := e.start(ctx, o); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

func (e *env) start(ctx context.Context, o envOptions) error {
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		return err
	}
	var err error
	if e.kafka, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topology.Topics()...),
		kfake.BrokerConfigs(map[string]string{"group.consumer.session.timeout.ms": "6000",
			"group.consumer.heartbeat.interval.ms": "1000"})); err != nil {
		return fmt.Errorf("start kfake: %w", err)
	}
	e.brokers = e.kafka.ListenAddrs()
	e.kafka.ControlKey(int16(kmsg.JoinGroup), shortSessions)
	e.rdb = redis.NewClient(&redis.Options{Addr: o.redisAddr, PoolSize: 32, DialTimeout: 2 * time.Second,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, PoolTimeout: 10 * time.Second})
	if e.store, err = redisstore.New(e.rdb, redisstore.Config{Prefix: e.prefix}); err != nil {
		return err
	}
	if e.ch, err = chstore.Open(ctx, chstore.Config{Addr: o.chAddr, Database: o.database,
		InsertTimeout: 10 * time.Second, Logger: e.log}); err != nil {
		return err
	}
	if err := e.ch.Migrate(ctx); err != nil {
		return fmt.Errorf("clickhouse schema: %w", err)
	}
	if err := e.startStages(); err != nil {
		return err
	}
	if err := e.startAPI(o.apiConfig); err != nil {
		return err
	}
	for i := range o.fanouts {
		if err := e.addFanout(i); err != nil {
			return err
		}
	}
	if o.live {
		return e.startLive(ctx)
	}
	return nil
}

// startLive starts two API processes and a push process of the binary
// and waits until the APIs answer.
func (e *env) startLive(ctx context.Context) error {
	ports, err := embedded.FreePorts(2)
	if err != nil {
		return err
	}
	common := []string{"-kafka", e.brokers[0], "-redis", e.redis, "-prefix", e.prefix, "-metrics-listen", ""}
	for i, port := range ports {
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		w := harness.NewProc(fmt.Sprintf("api-%d", i), e.dir, e.bin, append([]string{"api", "-listen", addr, "-node", fmt.Sprintf("api-%d", i),
			"-jwt-secret", jwtSecret, "-clickhouse", e.chAddr, "-clickhouse-db", e.database}, common...)...)
		if err := w.Start(); err != nil {
			return err
		}
		e.apis = append(e.apis, w)
		e.liveURLs = append(e.liveURLs, "http://"+addr)
	}
	e.pusher = harness.NewProc("push", e.dir, e.bin, append([]string{"push"}, common...)...)
	if err := e.pusher.Start(); err != nil {
		return err
	}
	for _, u := range e.liveURLs {
		if err := harness.WaitOK(ctx, u+"/readyz", 30*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// shortSessions lowers every group member's session timeout to 6 s and
// rebalance timeout to 15 s as the broker takes the join (and the broker
// configuration does the same for KIP-848 groups): a worker killed with
// -9 is then noticed in seconds instead of the default 45 s, so a
// scenario with several kills stays short. Members still heartbeat every
// few seconds at most.
func shortSessions(req kmsg.Request) (kmsg.Response, error, bool) {
	if j, ok := req.(*kmsg.JoinGroupRequest); ok {
		j.SessionTimeoutMillis = min(j.SessionTimeoutMillis, 6000)
		j.RebalanceTimeoutMillis = min(j.RebalanceTimeoutMillis, 15000)
	}
	return nil, nil, false
}

// sanitize keeps letters, digits and '_' (a ClickHouse database name).
func sanitize(s string) string {
	out := []byte(s)
	for i, c := range out {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			out[i] = '_'
		}
	}
	return string(out)
}

func (e *env) startStages() error {
	router := redisstore.NewInboxRouter(e.store, nil, 0)
	ix, err := convindex.New(convindex.Config{Logger: e.log}, router)
	if err != nil {
		return err
	}
	hist, err := history.New(history.Config{Logger: e.log, InsertTimeout: 10 * time.Second}, e.ch)
	if err != nil {
		return err
	}
	for _, s := range []struct {
		stage topology.Stage
		h     stream.Handler
	}{
		{topology.Convindex(), ix},
		{topology.History(), hist},
	} {
		cfg := s.stage.RunnerConfig(e.brokers)
		cfg.RetryMax, cfg.Logger = 2*time.Second, e.log
		st, err := harness.StartStage(cfg, s.h)
		if err != nil {
			return fmt.Errorf("start %s: %w", s.stage.Group, err)
		}
		e.stages = append(e.stages, st)
	}
	return nil
}

func (e *env) startAPI(cfg api.Config) error {
	var err error
	if e.keyring, err = auth.New(auth.Config{Secret: []byte(jwtSecret), TTL: time.Hour}); err != nil {
		return err
	}
	if e.prod, err = stream.NewProducer(e.brokers); err != nil {
		return err
	}
	srv, err := api.New(cfg, api.Deps{Router: redisstore.NewInboxRouter(e.store, nil, 0), Keyring: e.keyring,
		Producer: e.prod, History: e.ch, Logger: e.log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for the API: %w", err)
	}
	e.apiURL = "http://" + ln.Addr().String()
	e.srv = &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second, WriteTimeout: time.Minute}
	go func() {
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.Error("api server stopped", "err", err)
		}
	}()
	return nil
}

// addFanout starts fanout process number i.
func (e *env) addFanout(i int) error {
	w := harness.NewProc(fmt.Sprintf("fanout-%d", i), e.dir, e.bin, "fanout",
		"-kafka", e.brokers[0], "-redis", e.redis, "-prefix", e.prefix, "-metrics-listen", "")
	e.fanouts = append(e.fanouts, w)
	return w.Start()
}

// token mints a device's bearer token and remembers it (the log test
// looks for every token minted).
func (e *env) token(user, device string) (string, error) {
	tok, err := e.keyring.Mint(user, device, time.Hour)
	e.mu.Lock()
	e.minted = append(e.minted, tok)
	e.mu.Unlock()
	return tok, err
}

// drain waits until fanout, convindex and history have committed
// everything produced so far, in pipeline order.
func (e *env) drain(ctx context.Context) error {
	var groups []checker.GroupTopics
	for _, s := range []topology.Stage{topology.Fanout(), topology.Convindex(), topology.History()} {
		groups = append(groups, checker.GroupTopics{Group: s.Group, Topics: s.Inputs})
	}
	return checker.WaitCaughtUp(ctx, e.brokers, groups...)
}

// stop takes the scenario's system down, workers first. It is idempotent.
func (e *env) stop() { e.stopOnce.Do(e.stopAll) }

func (e *env) stopAll() {
	for _, w := range e.apis {
		w.Stop(10 * time.Second)
	}
	if e.pusher != nil {
		e.pusher.Stop(10 * time.Second)
	}
	for _, w := range e.fanouts {
		w.Stop(10 * time.Second)
	}
	if e.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = e.srv.Shutdown(ctx)
		cancel()
	}
	for _, s := range e.stages {
		s.Stop()
	}
	if e.prod != nil {
		e.prod.Close()
	}
	if e.ch != nil {
		_ = e.ch.Close()
	}
	if e.rdb != nil {
		_ = e.rdb.Close()
	}
	if e.kafka != nil {
		e.kafka.Close()
	}
}
