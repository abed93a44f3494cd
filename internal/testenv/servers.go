package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/embedded"
)

// dirPrefix names the temporary folders of self-started servers; the pid
// after it lets a later binary remove folders whose owner has died.
const dirPrefix = "offlinebox-testenv-"

// ownServer is a server this test binary starts the first time a test asks
// for it, and shares with every later test.
type ownServer struct {
	once sync.Once
	addr string
	err  error
}

// ownServers are the servers of this test binary: one redis-server, one
// clickhouse-server and one Redis Cluster at most, all stopped by Main. It
// is the package's only state, and it exists because a server per test
// would cost seconds each.
type ownServers struct {
	mu      sync.Mutex
	ctx     context.Context // ends when Main stops the servers
	cancel  context.CancelFunc
	dir     string
	stops   []func(context.Context) error
	redis   ownServer
	ch      ownServer
	cluster ownServer
}

var own = func() *ownServers {
	ctx, cancel := context.WithCancel(context.Background())
	return &ownServers{ctx: ctx, cancel: cancel}
}()

// Main runs a package's tests and then stops the servers they started.
// Use it as a package's TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// Without it the servers still die with the test binary (the kernel kills
// them when their parent exits), but their folders stay until a later test
// binary sweeps them.
func Main(m *testing.M) {
	code := m.Run()
	StopServers()
	os.Exit(code)
}

// StopServers stops every server this test binary started and removes
// their folders. Tests that ask for a server afterwards fail.
func StopServers() {
	own.mu.Lock()
	defer own.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := len(own.stops) - 1; i >= 0; i-- {
		_ = own.stops[i](ctx)
	}
	own.stops = nil
	own.cancel()
	if own.dir != "" {
		_ = os.RemoveAll(own.dir)
	}
}

// start runs fn once for s with a folder of its own, and remembers the
// stop function fn returns.
func (o *ownServers) start(s *ownServer, name string, fn func(ctx context.Context, dir string) (string, func(context.Context) error, error)) (string, error) {
	s.once.Do(func() {
		dir, err := o.folder(name)
		if err != nil {
			s.err = err
			return
		}
		addr, stop, err := fn(o.ctx, dir)
		if err != nil {
			s.err = err
			return
		}
		o.mu.Lock()
		o.stops = append(o.stops, stop)
		o.mu.Unlock()
		s.addr = addr
	})
	return s.addr, s.err
}

// folder makes dir/name under this binary's temporary folder.
func (o *ownServers) folder(name string) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ctx.Err() != nil {
		return "", errors.New("testenv: servers already stopped")
	}
	if o.dir == "" {
		sweepDeadFolders()
		dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", dirPrefix, os.Getpid()))
		if err != nil {
			return "", fmt.Errorf("testenv folder: %w", err)
		}
		o.dir = dir
	}
	dir := filepath.Join(o.dir, name)
	return dir, os.MkdirAll(dir, 0o755)
}

// sweepDeadFolders removes the folders of test binaries that died without
// running Main.
func sweepDeadFolders() {
	if _, err := os.Stat("/proc/self"); err != nil {
		return // no way to tell a dead owner from a live one
	}
	entries, _ := os.ReadDir(os.TempDir())
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), dirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, os.ErrNotExist) {
			_ = os.RemoveAll(filepath.Join(os.TempDir(), e.Name()))
		}
	}
}

func startOwnRedis(ctx context.Context, dir string) (string, func(context.Context) error, error) {
	p, err := embedded.StartRedis(ctx, embedded.RedisOptions{Dir: dir})
	if err != nil {
		return "", nil, err
	}
	return p.Addr(), p.Stop, nil
}

func startOwnClickHouse(ctx context.Context, dir string) (string, func(context.Context) error, error) {
	p, err := embedded.StartClickHouse(ctx, embedded.ClickHouseOptions{Dir: dir})
	if err != nil {
		return "", nil, err
	}
	return p.Addr(), p.Stop, nil
}

func startOwnCluster(ctx context.Context, dir string) (string, func(context.Context) error, error) {
	c, err := embedded.StartRedisCluster(ctx, dir, 3)
	if err != nil {
		return "", nil, err
	}
	return strings.Join(c.Addrs(), ","), c.Stop, nil
}
