package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/api"
	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/stream"
	"github.com/offlinebox/offlinebox/topology"
	"github.com/offlinebox/offlinebox/workers/push"
)

// The server processes are this program run again with childEnv set: an
// API node (and, in the first, the push stage), so that their CPU and
// memory are measured apart from the devices and the rest of the pipeline.
const childEnv = "OFFLINEBOX_BENCH_LIVE_CHILD"

const secret = "offlinebox-bench-live-secret-0123456789"

type childConfig struct {
	Redis     string
	Brokers   string
	Prefix    string
	Node      string
	Push      bool
	Threshold int
	// WriteDelay is the node's LiveConfig.WriteDelay (0: the default).
	WriteDelay time.Duration
}

func (c childConfig) env() []string {
	return []string{childEnv + "=1", "OBL_REDIS=" + c.Redis, "OBL_BROKERS=" + c.Brokers, "OBL_PREFIX=" + c.Prefix,
		"OBL_NODE=" + c.Node, "OBL_PUSH=" + strconv.FormatBool(c.Push), "OBL_THRESHOLD=" + strconv.Itoa(c.Threshold),
		"OBL_WRITE_DELAY=" + c.WriteDelay.String()}
}

func startChild(ctx context.Context, c childConfig) (*harness.Child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return harness.StartChild(ctx, "server "+c.Node, exe, c.env())
}

// runChild serves one API node until stdin closes.
func runChild() error {
	if os.Getenv("OBL_MEMRATE") != "" {
		runtime.MemProfileRate = 1
	}
	c := childConfig{Redis: os.Getenv("OBL_REDIS"), Brokers: os.Getenv("OBL_BROKERS"), Prefix: os.Getenv("OBL_PREFIX"),
		Node: os.Getenv("OBL_NODE"), Push: os.Getenv("OBL_PUSH") == "true"}
	c.Threshold, _ = strconv.Atoi(os.Getenv("OBL_THRESHOLD"))
	c.WriteDelay, _ = time.ParseDuration(os.Getenv("OBL_WRITE_DELAY"))
	if err := harness.CheckLoopback("redis", c.Redis); err != nil {
		return err
	}
	// The pool is filled at start: it is the process's, not a connection's.
	rdb := redis.NewClient(&redis.Options{Addr: c.Redis, PoolSize: 64, MinIdleConns: 64, PoolTimeout: 30 * time.Second})
	defer rdb.Close()
	storeCfg := redisstore.Config{Prefix: c.Prefix, LargeGroupThreshold: c.Threshold}
	st, err := redisstore.New(rdb, storeCfg)
	if err != nil {
		return err
	}
	brokers := strings.Split(c.Brokers, ",")
	prod, err := stream.NewProducer(brokers)
	if err != nil {
		return err
	}
	defer prod.Close()
	kr, err := auth.New(auth.Config{Secret: []byte(secret), TTL: 24 * time.Hour})
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	srv, err := api.New(api.Config{MaxInFlight: 4096, Live: api.LiveConfig{Node: c.Node, WriteDelay: c.WriteDelay}},
		api.Deps{Router: redisstore.NewInboxRouter(st, nil, 0), Keyring: kr, Producer: prod, Logger: harness.QuietLogger(), Metrics: reg})
	if err != nil {
		return err
	}
	defer srv.Close()
	if c.Push {
		stop, err := startPushStages(storeCfg, reg, rdb, brokers)
		if err != nil {
			return err
		}
		defer stop()
	}
	if path := os.Getenv("OBL_CPUPROFILE"); path != "" {
		stop, err := harness.StartCPUProfile(path + "." + c.Node)
		if err != nil {
			return err
		}
		defer stop()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	return harness.ServeChild(ln, childMux(reg, srv.Handler()), srv.Close)
}

// startPushStages runs the push stage's runners in this process; stop
// ends them.
func startPushStages(storeCfg redisstore.Config, reg *prometheus.Registry, rdb *redis.Client, brokers []string) (stop func(), err error) {
	p, err := push.New(push.Config{Store: storeCfg, Logger: harness.QuietLogger(), Metrics: reg}, rdb)
	if err != nil {
		return nil, err
	}
	var stages []*harness.Stage
	stop = func() {
		for i := len(stages) - 1; i >= 0; i-- {
			stages[i].Stop()
		}
	}
	for _, s := range topology.PushStages() {
		stage, err := harness.StartStage(s.RunnerConfig(brokers), p)
		if err != nil {
			stop()
			return nil, err
		}
		stages = append(stages, stage)
	}
	return stop, nil
}

// childMux serves the API beside the benchmark's own routes: metrics,
// memory and profiles.
func childMux(reg *prometheus.Registry, api http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// The benchmark asks for a collection before it reads the resident
	// memory, so that idle memory is what the connections hold, not
	// garbage of the connect burst.
	mux.HandleFunc("GET /debug/heap", func(w http.ResponseWriter, _ *http.Request) {
		runtime.GC()
		_ = pprof.Lookup("heap").WriteTo(w, 0)
	})
	mux.HandleFunc("POST /debug/free", func(w http.ResponseWriter, _ *http.Request) {
		for range 4 { // each collection halves the stacks of idle goroutines
			debug.FreeOSMemory()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Fprintf(w, `{"heap_inuse":%d,"stack_inuse":%d,"sys":%d,"goroutines":%d}`, ms.HeapInuse, ms.StackInuse, ms.Sys, runtime.NumGoroutine())
	})
	// A phase's profile: go tool pprof http://ADDR/debug/pprof/profile?seconds=10
	mux.HandleFunc("GET /debug/pprof/profile", httppprof.Profile)
	mux.Handle("GET /debug/pprof/allocs", httppprof.Handler("allocs"))
	mux.Handle("/", api)
	return mux
}

// procCPU is the user+system CPU a process used so far (0 when it
// cannot be read).
func procCPU(pid int) time.Duration {
	d, _ := harness.ProcessCPU(pid)
	return d
}
