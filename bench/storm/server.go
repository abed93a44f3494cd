package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/api"
	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/stream"
)

// The API server is this program run again with serverEnv set, so that
// its CPU is measured apart from the clients that storm it.
const serverEnv = "OFFLINEBOX_BENCH_STORM_SERVER"

const secret = "offlinebox-bench-storm-secret-0123456789"

// serverPool is the API's Redis connection pool.
const serverPool = 256

// apiServer is the API process as the benchmark sees it.
type apiServer struct {
	*harness.Child
	keyring *auth.Keyring
}

// startServer runs exe (this program, or a storm program built from
// another tree: the baseline) as an API server.
func startServer(ctx context.Context, exe, redisAddr string, brokers []string, prefix, cpuprofile, memprofile string) (*apiServer, error) {
	kr, err := auth.New(auth.Config{Secret: []byte(secret), TTL: 24 * time.Hour})
	if err != nil {
		return nil, err
	}
	c, err := harness.StartChild(ctx, "the API server", exe, []string{serverEnv + "=1", "OBS_REDIS=" + redisAddr,
		"OBS_BROKERS=" + strings.Join(brokers, ","), "OBS_PREFIX=" + prefix, "OBS_CPUPROFILE=" + cpuprofile,
		"OBS_MEMPROFILE=" + memprofile})
	if err != nil {
		return nil, err
	}
	return &apiServer{Child: c, keyring: kr}, nil
}

// Token mints a bearer token of user pinned to device.
func (s *apiServer) Token(user, device string) (string, error) {
	return s.keyring.Mint(user, device, 24*time.Hour)
}

// runServer serves the API until stdin closes.
func runServer() error {
	addr, prefix := os.Getenv("OBS_REDIS"), os.Getenv("OBS_PREFIX")
	if err := harness.CheckLoopback("redis", addr); err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: serverPool, PoolTimeout: 30 * time.Second})
	defer rdb.Close()
	st, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		return err
	}
	prod, err := stream.NewProducer(strings.Split(os.Getenv("OBS_BROKERS"), ","))
	if err != nil {
		return err
	}
	defer prod.Close()
	kr, err := auth.New(auth.Config{Secret: []byte(secret), TTL: 24 * time.Hour})
	if err != nil {
		return err
	}
	srv, err := api.New(api.Config{}, api.Deps{Router: redisstore.NewInboxRouter(st, nil, 0), Keyring: kr, Producer: prod,
		Logger: harness.QuietLogger()})
	if err != nil {
		return err
	}
	defer srv.Close()
	if path := os.Getenv("OBS_CPUPROFILE"); path != "" {
		stop, err := harness.StartCPUProfile(path)
		if err != nil {
			return err
		}
		defer stop()
	}
	if path := os.Getenv("OBS_MEMPROFILE"); path != "" {
		defer func() {
			if err := writeAllocs(path); err != nil {
				fmt.Fprintln(os.Stderr, "storm API server:", err)
			}
		}()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	return harness.ServeChild(ln, srv.Handler(), nil)
}

// writeAllocs writes the allocations of the process's life so far.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("allocs profile: %w", err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		return fmt.Errorf("allocs profile: %w", err)
	}
	return nil
}
