package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"
)

// DebianPackages are the packages that provide the servers this package
// starts.
func DebianPackages() []string {
	return []string{"redis-server", "clickhouse-server", "clickhouse-client"}
}

// policyRC is Debian's hook that invoke-rc.d (and deb-systemd-invoke)
// consult before starting a service from a package script; exit code 101
// means "do not start".
const policyRC = "/usr/sbin/policy-rc.d"

// EnsurePackages makes sure redis-server and clickhouse-server are
// installed. When one is missing and this process runs as root, it runs
// apt-get update and installs DebianPackages; otherwise it returns an error
// naming what to install.
//
// The clickhouse-server package starts a system service on install where an
// init system runs; our children never collide with it (own ports, own
// folders), and while we install, a temporary policy-rc.d keeps package
// scripts from starting services at all.
func EnsurePackages(ctx context.Context, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	missing := MissingServers()
	if len(missing) == 0 {
		return nil
	}
	install := "apt-get install -y " + strings.Join(DebianPackages(), " ")
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s %w: as root run `apt-get update && %s`", strings.Join(missing, " and "), ErrNotInstalled, install)
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("%s %w and apt-get is not available: install %s", strings.Join(missing, " and "), ErrNotInstalled, strings.Join(DebianPackages(), ", "))
	}
	logger.Info("installing server packages", "missing", missing, "packages", DebianPackages())
	removeGuard, err := blockServiceStarts()
	if err != nil {
		return err
	}
	defer removeGuard()
	if err := runApt(ctx, logger, "update"); err != nil {
		return err
	}
	if err := runApt(ctx, logger, append([]string{"install", "-y"}, DebianPackages()...)...); err != nil {
		return err
	}
	if still := MissingServers(); len(still) > 0 {
		return fmt.Errorf("%s still %w after %s", strings.Join(still, " and "), ErrNotInstalled, install)
	}
	logger.Info("server packages installed")
	return nil
}

// MissingServers names the server binaries (redis-server, clickhouse-server)
// that are not installed on this machine.
func MissingServers() []string {
	var missing []string
	for _, name := range []string{"redis-server", "clickhouse-server"} {
		if _, err := findBinary("", name); err != nil {
			missing = append(missing, name)
		}
	}
	return missing
}

// blockServiceStarts installs a policy-rc.d that forbids service starts,
// unless the machine already has one (then its owner's policy stands).
func blockServiceStarts() (func(), error) {
	if _, err := os.Stat(policyRC); err == nil {
		return func() {}, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("check %s: %w", policyRC, err)
	}
	if err := os.WriteFile(policyRC, []byte("#!/bin/sh\nexit 101\n"), 0o755); err != nil {
		return nil, fmt.Errorf("write %s: %w", policyRC, err)
	}
	return func() { _ = os.Remove(policyRC) }, nil
}

func runApt(ctx context.Context, logger *slog.Logger, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("apt-get %s: %w\n%s", strings.Join(args, " "), err, readTailBytes(out.Bytes(), 2000))
	}
	logger.Info("apt-get done", "args", args, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

func readTailBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
