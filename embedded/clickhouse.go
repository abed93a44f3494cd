package embedded

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// DefaultClickHouseConfig is the server configuration Debian's
// clickhouse-server package installs; StartClickHouse overrides every path
// and port in it, so children never touch the system server's data.
const DefaultClickHouseConfig = "/etc/clickhouse-server/config.xml"

// ClickHouseOptions describe one clickhouse-server child. Zero values take
// defaults.
type ClickHouseOptions struct {
	// Dir holds data/, tmp/, user_files/, format_schemas/ and log/. Required.
	Dir string
	// TCPPort is the native protocol port; 0 picks a free one.
	TCPPort int
	// HTTPPort is the HTTP interface port; 0 picks a free one.
	HTTPPort int
	// InterserverPort is the replica exchange port; 0 picks a free one.
	InterserverPort int
	// ConfigFile is the base configuration (DefaultClickHouseConfig when
	// empty). Its users.xml is used as is: user "default", no password.
	ConfigFile string
	// Args are extra overrides passed after "--", e.g. "--logger.level=debug".
	Args []string
	// Bin is the clickhouse-server binary; found on PATH or in /usr/sbin
	// when empty.
	Bin string
	// StartTimeout bounds the wait for the first native ping (default 90s).
	StartTimeout time.Duration
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL when its
	// context has no deadline (default 30s).
	StopGrace time.Duration
}

func (o ClickHouseOptions) withDefaults() ClickHouseOptions {
	if o.ConfigFile == "" {
		o.ConfigFile = DefaultClickHouseConfig
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 90 * time.Second
	}
	if o.StopGrace == 0 {
		o.StopGrace = 30 * time.Second
	}
	return o
}

// Validate reports the first option that is out of range.
func (o ClickHouseOptions) Validate() error {
	if o.Dir == "" {
		return fmt.Errorf("embedded: ClickHouseOptions.Dir is required")
	}
	for _, p := range []struct {
		name string
		port int
	}{{"TCPPort", o.TCPPort}, {"HTTPPort", o.HTTPPort}, {"InterserverPort", o.InterserverPort}} {
		if p.port < 0 || p.port > 65535 {
			return fmt.Errorf("embedded: ClickHouseOptions.%s %d is out of range", p.name, p.port)
		}
	}
	return nil
}

// StartClickHouse starts a clickhouse-server child on 127.0.0.1 and waits
// until it answers a native-protocol ping. The child is stopped when ctx
// ends.
//
// Running as root needs no flag: the server refuses only data folders owned
// by another user, and the folders here are created by the caller.
func StartClickHouse(ctx context.Context, opts ClickHouseOptions) (*Process, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	bin, err := findBinary(opts.Bin, "clickhouse-server")
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("clickhouse dir %s: %w", opts.Dir, err)
	}
	extra, err := clickhouseCollisions(opts.ConfigFile)
	if err != nil {
		return nil, err
	}
	for _, sub := range []string{"data", "tmp", "user_files", "format_schemas", "log"} {
		if err := makeDir(filepath.Join(dir, sub)); err != nil {
			return nil, err
		}
	}
	return startPicking(ctx, func() (*Process, bool, error) {
		o := opts
		picked, err := fillPorts(&o.TCPPort, &o.HTTPPort, &o.InterserverPort)
		if err != nil {
			return nil, false, err
		}
		p, err := newClickHouseProcess(ctx, bin, dir, o, extra)
		return p, picked, err
	})
}

func newClickHouseProcess(life context.Context, bin, dir string, o ClickHouseOptions, extra clickhouseExtras) (*Process, error) {
	slash := func(sub string) string { return filepath.Join(dir, sub) + string(os.PathSeparator) }
	logFile := filepath.Join(dir, "log", "clickhouse-server.log")
	errFile := filepath.Join(dir, "log", "clickhouse-server.err.log")
	args := []string{
		"--config-file=" + o.ConfigFile, "--",
		"--path=" + slash("data"),
		"--tmp_path=" + slash("tmp"),
		"--user_files_path=" + slash("user_files"),
		"--format_schema_path=" + slash("format_schemas"),
		"--tcp_port=" + fmt.Sprint(o.TCPPort),
		"--http_port=" + fmt.Sprint(o.HTTPPort),
		"--interserver_http_port=" + fmt.Sprint(o.InterserverPort),
		"--listen_host=" + Loopback,
		"--logger.log=" + logFile,
		"--logger.errorlog=" + errFile,
	}
	for _, name := range extra.paths {
		args = append(args, fmt.Sprintf("--%s=%s", name, slash(name)))
	}
	if len(extra.ports) > 0 {
		free, err := FreePorts(len(extra.ports))
		if err != nil {
			return nil, err
		}
		for i, name := range extra.ports {
			args = append(args, fmt.Sprintf("--%s=%d", name, free[i]))
		}
	}
	args = append(args, o.Args...)
	addr := hostPort(o.TCPPort)
	return &Process{
		name:      "clickhouse-server",
		bin:       bin,
		args:      args,
		dir:       dir,
		addr:      addr,
		httpAddr:  hostPort(o.HTTPPort),
		logs:      []string{errFile},
		ready:     func(ctx context.Context) error { return pingClickHouse(ctx, addr) },
		startWait: o.StartTimeout,
		stopGrace: o.StopGrace,
		life:      life,
	}, nil
}

// pingClickHouse succeeds once the server answers a native-protocol ping.
func pingClickHouse(ctx context.Context, addr string) error {
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{addr},
		Protocol:    clickhouse.Native,
		DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second,
	})
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Ping(ctx)
}
