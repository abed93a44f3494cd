package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/embedded"
	"github.com/offlinebox/offlinebox/topology"
)

// demoOptions are the demo's own flags.
type demoOptions struct {
	once    bool
	reset   bool
	dataDir string
	listen  string
	metrics string
	secret  string
}

// runDemo runs the whole pipeline on an embedded stack, seeds a scenario,
// catches up as one user through the API and prints what happened.
func runDemo(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseDemoOptions(args)
	if err != nil {
		return err
	}
	if err := embedded.EnsurePackages(ctx, slog.Default()); err != nil {
		return err
	}
	dir, keyFile, err := prepareDemoDir(&o)
	if err != nil {
		return err
	}
	// The servers outlive the pipeline: they stop after it drained.
	cfg, stopServers, err := startEmbeddedStack(ctx, dir, o)
	defer stopServers()
	if err != nil {
		return err
	}
	cfg.KeyFile = keyFile
	pctx, stopPipeline := context.WithCancel(ctx)
	defer stopPipeline()
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- runPipeline(pctx, cfg, func(a net.Addr) { ready <- a }) }()
	var base string
	select {
	case a := <-ready:
		base = "http://" + a.String()
	case err := <-done:
		return fmt.Errorf("pipeline: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	keyring, err := auth.New(auth.Config{Secret: []byte(cfg.JWTSecret)})
	if err != nil {
		return err
	}
	d := &demo{base: base, keyring: keyring, out: stdout, cfg: cfg}
	result, err := d.play(ctx)
	if err != nil {
		return err
	}
	if !o.once {
		if err := serveDemo(ctx, d, dir, done); err != nil {
			return err
		}
	}
	stopPipeline()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("pipeline: %w", err)
	}
	return result.broken()
}

// prepareDemoDir makes the data folder (emptied first with -reset) and
// the secret and key file kept in it, so that a second run reads what the
// first one stored.
func prepareDemoDir(o *demoOptions) (dir, keyFile string, err error) {
	if dir, err = filepath.Abs(o.dataDir); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("data folder %s: %w", dir, err)
	}
	if o.reset {
		if err := resetDemoData(dir); err != nil {
			return "", "", err
		}
	}
	if o.secret == "" {
		if o.secret, err = demoSecret(dir); err != nil {
			return "", "", err
		}
	}
	if keyFile, err = demoKeyFile(dir); err != nil {
		return "", "", err
	}
	return dir, keyFile, nil
}

// serveDemo keeps the demo's stack serving after its scenario until ctx
// ends or the pipeline fails, with the env file that points every
// subcommand at it written for that long.
func serveDemo(ctx context.Context, d *demo, dir string, done <-chan error) error {
	path, removeEnv, err := writeDemoEnv(dir, d.base, d.cfg)
	defer removeEnv()
	if err != nil {
		return err
	}
	tok, _ := d.keyring.Mint(demoUser, "", 24*time.Hour)
	link, err := signInLink(d.keyring, d.base, demoUser)
	if err != nil {
		return err
	}
	base, stdout := d.base, d.out
	fmt.Fprintf(stdout, "\nServing on %s until interrupted.\n  The web client: %s/\n  Signed in as %s: %s\n", base, base, demoUser, link)
	fmt.Fprintf(stdout, "Addresses and the secret are in %s;\nevery offlinebox subcommand %s reads it:\n"+
		"  offlinebox token bob -device laptop\n  offlinebox verify\n  offlinebox history sql \"SELECT count() FROM messages\"\n"+
		"  curl -s -H 'Authorization: Bearer %s' %s/v1/conversations\n", path, whereEnvIsRead(path), tok, base)
	select {
	case <-ctx.Done():
		return nil
	case err := <-done:
		return fmt.Errorf("pipeline: %w", err)
	}
}

func parseDemoOptions(args []string) (demoOptions, error) {
	fs := flag.NewFlagSet("offlinebox demo", flag.ContinueOnError)
	var o demoOptions
	fs.BoolVar(&o.once, "once", false, "exit after the summary instead of serving")
	fs.BoolVar(&o.reset, "reset", false, "start over: remove the data folder's Kafka, Redis and ClickHouse data first (its secret and master keys stay)")
	fs.StringVar(&o.dataDir, "data", ".data", "folder for the embedded Kafka, Redis and ClickHouse data")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "HTTP API address")
	fs.StringVar(&o.metrics, "metrics-listen", "127.0.0.1:9464", "Prometheus /metrics address; empty to disable")
	fs.StringVar(&o.secret, "jwt-secret", "", "HS256 secret (env OFFLINEBOX_JWT_SECRET; else the one kept in the data folder, made at random the first time; never printed)")
	var lo logOptions
	lo.bind(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if err := lo.apply(os.Stderr); err != nil {
		return o, err
	}
	if o.secret == "" {
		o.secret = env("OFFLINEBOX_JWT_SECRET", "")
	}
	return o, nil
}

// demoSecret is the secret kept in the data folder (made at random the
// first time), so that tokens minted against one run of the demo work
// against the next.
func demoSecret(dir string) (string, error) {
	path := filepath.Join(dir, "jwt-secret")
	b, err := os.ReadFile(path)
	if err == nil && len(b) >= 16 {
		return string(b), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read the demo's secret: %w", err)
	}
	secret := randomSecret()
	if err := os.WriteFile(path, []byte(secret), 0o600); err != nil {
		return "", fmt.Errorf("keep the demo's secret: %w", err)
	}
	return secret, nil
}

// whereEnvIsRead says how a subcommand finds the env file at path.
func whereEnvIsRead(path string) string {
	if filepath.Base(filepath.Dir(path)) == ".data" {
		return "run from " + filepath.Dir(filepath.Dir(path))
	}
	return "given " + envFileVar + "=" + path
}

// writeDemoEnv writes where the demo's servers listen, and its secret,
// to the env file every subcommand reads; the returned func removes it.
func writeDemoEnv(dir, base string, cfg *stackConfig) (string, func(), error) {
	path := filepath.Join(dir, envFileName)
	vals := map[string]string{
		"OFFLINEBOX_KAFKA":           cfg.Kafka,
		"OFFLINEBOX_REDIS":           cfg.Redis,
		"OFFLINEBOX_CLICKHOUSE":      cfg.ClickHouse,
		"OFFLINEBOX_CLICKHOUSE_DB":   cfg.ClickHouseDB,
		"OFFLINEBOX_CLICKHOUSE_USER": cfg.ClickHouseUser,
		"OFFLINEBOX_PREFIX":          cfg.Prefix,
		"OFFLINEBOX_JWT_SECRET":      cfg.JWTSecret,
		"OFFLINEBOX_KEY_FILE":        cfg.KeyFile,
		envAPI:                       base,
	}
	header := "Written by `offlinebox demo` while it serves; removed when it stops.\n" +
		"Every offlinebox subcommand run from the folder above reads it; a shell can too: set -a; . " + path + "; set +a\n" +
		"It holds the demo's JWT secret: for local use only."
	if err := writeEnvFile(path, header, vals); err != nil {
		return "", func() {}, err
	}
	return path, func() { _ = os.Remove(path) }, nil
}

// startEmbeddedStack starts redis-server, clickhouse-server and kfake with
// their data under dir. stop stops whatever was started, and returns once
// it has; it is safe to call after a failed start.
func startEmbeddedStack(ctx context.Context, dir string, o demoOptions) (cfg *stackConfig, stop func(), err error) {
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		stops = nil
		cancel()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, stop, fmt.Errorf("data folder %s: %w", dir, err)
	}
	stopProcess := func(p *embedded.Process) func() {
		return func() {
			sctx, done := context.WithTimeout(context.Background(), 30*time.Second)
			defer done()
			_ = p.Stop(sctx)
		}
	}
	rds, err := embedded.StartRedis(life, embedded.RedisOptions{Dir: filepath.Join(dir, "redis"), AppendOnly: true})
	if err != nil {
		return nil, stop, fmt.Errorf("start redis-server: %w", err)
	}
	stops = append(stops, stopProcess(rds))
	ch, err := embedded.StartClickHouse(life, embedded.ClickHouseOptions{Dir: filepath.Join(dir, "clickhouse")})
	if err != nil {
		return nil, stop, fmt.Errorf("start clickhouse-server: %w", err)
	}
	stops = append(stops, stopProcess(ch))
	const partitions = 4
	kf, err := embedded.StartKafka(filepath.Join(dir, "kafka"), partitions, topology.Topics()...)
	if err != nil {
		return nil, stop, fmt.Errorf("start kfake: %w", err)
	}
	stops = append(stops, kf.Close)
	slog.Info("embedded stack up", "redis", rds.Addr(), "clickhouse", ch.Addr(), "kafka", kf.ListenAddrs(), "data", dir)
	return &stackConfig{
		Kafka: kf.ListenAddrs()[0], Redis: rds.Addr(), ClickHouse: ch.Addr(), ClickHouseDB: "offlinebox",
		ClickHouseUser: "default", Prefix: "ob:", Listen: o.listen, MetricsListen: o.metrics, JWTSecret: o.secret, Partitions: partitions,
	}, stop, ctx.Err()
}

// resetDemoData removes the stores' data under dir: the next start is a
// first start. The secret and the key file stay, so tokens minted before
// still verify.
func resetDemoData(dir string) error {
	for _, sub := range []string{"redis", "clickhouse", "kafka"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return fmt.Errorf("reset %s: %w", sub, err)
		}
	}
	slog.Info("demo data reset", "data", dir)
	return nil
}

// demoKeyFile is the demo's master key file in the data folder (made
// with one random key the first time): the demo seals bodies at rest.
func demoKeyFile(dir string) (string, error) {
	path := filepath.Join(dir, "master-keys.jsonl")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := addMasterKey(path, "demo-1", io.Discard); err != nil {
		return "", fmt.Errorf("make the demo's key file: %w", err)
	}
	return path, nil
}

func randomSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// signInLink opens the web client signed in as user, on the browser's
// own device.
func signInLink(keyring *auth.Keyring, base, user string) (string, error) {
	tok, err := keyring.Mint(user, "web", 24*time.Hour)
	if err != nil {
		return "", fmt.Errorf("mint a token for %s: %w", user, err)
	}
	return base + "/#token=" + tok, nil
}

// demoClient is a client of user on device.
func (d *demo) client(user, device string) (*client.Client, error) {
	tok, err := d.keyring.Mint(user, device, time.Hour)
	if err != nil {
		return nil, err
	}
	return client.New(d.base, tok, nil), nil
}
