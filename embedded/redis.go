package embedded

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisOptions describe one redis-server child. Zero values take defaults.
type RedisOptions struct {
	// Dir holds the data (AOF, nodes.conf) and redis.log. Required.
	Dir string
	// Port on 127.0.0.1; 0 picks a free one.
	Port int
	// AppendOnly turns on the append-only file, so data survives a restart
	// (and, with AppendFsync "always", a SIGKILL). Off, the server keeps
	// nothing on disk.
	AppendOnly bool
	// AppendFsync is "everysec" (default), "always" or "no".
	AppendFsync string
	// Args are extra redis-server arguments, e.g. "--maxmemory", "64mb".
	Args []string
	// Bin is the redis-server binary; found on PATH when empty.
	Bin string
	// StartTimeout bounds the wait for the first PING (default 15s).
	StartTimeout time.Duration
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL when its
	// context has no deadline (default 10s).
	StopGrace time.Duration
}

func (o RedisOptions) withDefaults() RedisOptions {
	if o.AppendFsync == "" {
		o.AppendFsync = "everysec"
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 15 * time.Second
	}
	if o.StopGrace == 0 {
		o.StopGrace = 10 * time.Second
	}
	return o
}

// Validate reports the first option that is out of range.
func (o RedisOptions) Validate() error {
	switch {
	case o.Dir == "":
		return fmt.Errorf("embedded: RedisOptions.Dir is required")
	case o.Port < 0 || o.Port > 65535:
		return fmt.Errorf("embedded: RedisOptions.Port %d is out of range", o.Port)
	case o.AppendFsync != "" && o.AppendFsync != "everysec" && o.AppendFsync != "always" && o.AppendFsync != "no":
		return fmt.Errorf("embedded: RedisOptions.AppendFsync %q is not everysec, always or no", o.AppendFsync)
	}
	return nil
}

// StartRedis starts a redis-server child on 127.0.0.1 and waits until it
// answers PING. The child is stopped when ctx ends.
func StartRedis(ctx context.Context, opts RedisOptions) (*Process, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	bin, err := findBinary(opts.Bin, "redis-server")
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("redis dir %s: %w", opts.Dir, err)
	}
	if err := makeDir(dir); err != nil {
		return nil, err
	}
	return startPicking(ctx, func() (*Process, bool, error) {
		o := opts
		picked, err := fillPorts(&o.Port)
		if err != nil {
			return nil, false, err
		}
		return newRedisProcess(ctx, bin, dir, o), picked, nil
	})
}

func newRedisProcess(life context.Context, bin, dir string, o RedisOptions) *Process {
	appendOnly := "no"
	if o.AppendOnly {
		appendOnly = "yes"
	}
	logFile := filepath.Join(dir, "redis.log")
	args := []string{
		"--port", fmt.Sprint(o.Port),
		"--bind", Loopback,
		"--dir", dir,
		"--daemonize", "no",
		"--logfile", logFile,
		// No RDB snapshots: persistence, when wanted, is the AOF alone,
		// so a restart shows exactly what the AOF kept.
		"--save", "",
		"--appendonly", appendOnly,
		"--appendfsync", o.AppendFsync,
	}
	args = append(args, o.Args...)
	addr := hostPort(o.Port)
	return &Process{
		name:      "redis-server",
		bin:       bin,
		args:      args,
		dir:       dir,
		addr:      addr,
		logs:      []string{logFile},
		ready:     func(ctx context.Context) error { return pingRedis(ctx, addr) },
		startWait: o.StartTimeout,
		stopGrace: o.StopGrace,
		life:      life,
	}
}

// pingRedis succeeds once the server answers PING; while it loads its AOF
// it answers LOADING, which counts as not ready.
func pingRedis(ctx context.Context, addr string) error {
	rdb := redis.NewClient(&redis.Options{
		Addr:        addr,
		DialTimeout: time.Second,
		ReadTimeout: time.Second,
		MaxRetries:  -1,
	})
	defer rdb.Close()
	return rdb.Ping(ctx).Err()
}
