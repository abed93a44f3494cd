// Command testservers runs the redis-server and clickhouse-server that one
// `make test` run shares between all test binaries.
//
// It starts both under -dir on free loopback ports, writes their addresses
// as shell assignments to -env-file once both answer, and stops them on
// SIGTERM or SIGINT, or when the process -owner-pid (the script that runs
// the tests) is gone, so a killed test run leaves no server behind.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/offlinebox/offlinebox/embedded"
)

func main() {
	dir := flag.String("dir", "", "folder for the servers' data and logs (required)")
	envFile := flag.String("env-file", "", "file to write OFFLINEBOX_TEST_* assignments to once the servers answer (required)")
	ownerPid := flag.Int("owner-pid", 0, "stop when this process is gone (0: never)")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*dir, *envFile, *ownerPid, logger); err != nil {
		logger.Error("test servers", "err", err)
		os.Exit(1)
	}
}

func run(dir, envFile string, ownerPid int, logger *slog.Logger) error {
	if dir == "" || envFile == "" {
		return errors.New("-dir and -env-file are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if ownerPid > 0 {
		go watchOwner(ctx, cancel, ownerPid, logger)
	}

	rdb, err := embedded.StartRedis(ctx, embedded.RedisOptions{Dir: filepath.Join(dir, "redis")})
	if err != nil {
		return err
	}
	ch, err := embedded.StartClickHouse(ctx, embedded.ClickHouseOptions{Dir: filepath.Join(dir, "clickhouse")})
	if err != nil {
		_ = rdb.Stop(context.Background())
		return err
	}
	env := fmt.Sprintf("OFFLINEBOX_TEST_REDIS=%s\nOFFLINEBOX_TEST_CLICKHOUSE=%s\n", rdb.Addr(), ch.Addr())
	if err := writeAtomically(envFile, env); err != nil {
		_ = ch.Stop(context.Background())
		_ = rdb.Stop(context.Background())
		return err
	}
	logger.Info("test servers ready", "redis", rdb.Addr(), "clickhouse", ch.Addr(), "dir", dir)

	<-ctx.Done()
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer stopCancel()
	return errors.Join(ch.Stop(stopCtx), rdb.Stop(stopCtx))
}

// writeAtomically makes the file appear whole, so a reader polling for it
// never sees half of it.
func writeAtomically(name, text string) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}

// watchOwner cancels once the owner process no longer exists.
func watchOwner(ctx context.Context, cancel context.CancelFunc, pid int, logger *slog.Logger) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			logger.Warn("owner process is gone; stopping", "owner_pid", pid)
			cancel()
			return
		}
	}
}
