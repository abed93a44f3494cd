package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
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
	cmd     *exec.Cmd
	stdin   io.WriteCloser // held open: the server stops when it closes
	URL     string
	Pid     int
	keyring *auth.Keyring
}

// startServer runs exe (this program, or a storm program built from
// another tree: the baseline) as an API server.
func startServer(ctx context.Context, exe, redisAddr string, brokers []string, prefix, cpuprofile string) (*apiServer, error) {
	kr, err := auth.New(auth.Config{Secret: []byte(secret), TTL: 24 * time.Hour})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), serverEnv+"=1", "OBS_REDIS="+redisAddr, "OBS_BROKERS="+strings.Join(brokers, ","),
		"OBS_PREFIX="+prefix, "OBS_CPUPROFILE="+cpuprofile)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the API server: %w", err)
	}
	s := &apiServer{cmd: cmd, stdin: stdin, Pid: cmd.Process.Pid, keyring: kr}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				line <- u
			}
		}
	}()
	select {
	case s.URL = <-line:
		return s, nil
	case <-time.After(30 * time.Second):
		s.Stop()
		return nil, fmt.Errorf("the API server did not start")
	case <-ctx.Done():
		s.Stop()
		return nil, ctx.Err()
	}
}

// Token mints a bearer token of user pinned to device.
func (s *apiServer) Token(user, device string) (string, error) {
	return s.keyring.Mint(user, device, 24*time.Hour)
}

// Stop asks the server to finish (it writes its profile then) and waits.
func (s *apiServer) Stop() {
	_ = s.stdin.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// CPU is the user+system CPU the server used so far.
func (s *apiServer) CPU() (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.Pid))
	if err != nil {
		return 0, fmt.Errorf("API server CPU: %w", err)
	}
	st := string(data)
	fields := strings.Fields(st[strings.LastIndexByte(st, ')')+2:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("API server CPU: short /proc/%d/stat", s.Pid)
	}
	user, _ := strconv.ParseInt(fields[11], 10, 64)
	sys, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(user+sys) * (time.Second / 100), nil // USER_HZ
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
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	return harness.ServeChild(ln, srv.Handler(), nil)
}
