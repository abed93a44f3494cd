package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

type subcommand struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout io.Writer) error
}

func subcommands() []subcommand {
	return []subcommand{
		{"demo", "run everything on an embedded stack, seed a scenario, catch up as a user", runDemo},
		{"all", "run every worker and the API in one process against the configured stores", runAll},
		{"fanout", "run the fanout worker (im.messages -> Redis, im.sequenced)", runFanout},
		{"convindex", "run the conversation index worker (previews, read receipts)", runConvindex},
		{"push", "run the push stage (im.sequenced -> API nodes holding live connections)", runPush},
		{"history", "run the ClickHouse history sink; `history sql QUERY` runs a read-only query", runHistory},
		{"expiry", "run the retention worker", runExpiry},
		{"api", "serve the HTTP API and the live channel", runAPI},
		{"migrate", "create the topics and the ClickHouse schema (idempotent)", runMigrate},
		{"token", "mint a development bearer token: token USER [-device D]", runToken},
		{"revoke", "revoke a user's tokens and close their live connections: revoke -user U [-device D]", runRevoke},
		{"verify", "check a live store against the invariants; exit 1 on a violation, 2 when it could not check", runVerify},
		{"keys", "master keys of sealed bodies: keys add -id ID | rekey | retire -id ID", runKeys},
		{"rebuild", "restore Redis timelines from ClickHouse: rebuild -conv ID | -all", runRebuild},
		{"repair-evicted", "after a Redis evicted keys: rebuild every conversation from ClickHouse, then release fanout's eviction hold", runRepairEvicted},
		{"retention", "retention policies: `retention explain -conv ID` says which applies and why; `retention check FILE` shows what a file changes against the policy in force; `retention apply [-allow-shrink] FILE` confirms it", runRetention},
		{"probe", "GET a URL, exit 0 on a 2xx answer (container healthchecks): probe URL", runProbe},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: offlinebox SUBCOMMAND [flags]")
	fmt.Fprintln(w)
	for _, c := range subcommands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `offlinebox SUBCOMMAND -h` for its flags, `offlinebox --version` for the build.")
	fmt.Fprintf(w, "Settings come from flags, then OFFLINEBOX_* variables, then a running demo's %s.\n", defaultEnvFile)
}

// errVerifyFailed makes verify exit 1 without an extra error line.
var errVerifyFailed = errors.New("invariants violated")

// exitError carries the exit code of an error other than 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	if err := (logOptions{format: env("OFFLINEBOX_LOG_FORMAT", "text"), level: env("OFFLINEBOX_LOG_LEVEL", "info")}).apply(os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "offlinebox: %v\n", err)
		os.Exit(2)
	}
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage(os.Stderr)
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	if os.Args[1] == "--version" || os.Args[1] == "-version" || os.Args[1] == "version" {
		fmt.Println(version())
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	name, args := os.Args[1], os.Args[2:]
	for _, c := range subcommands() {
		if c.name != name {
			continue
		}
		err := c.run(ctx, args, os.Stdout)
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return
		case errors.Is(err, errVerifyFailed):
			os.Exit(1)
		default:
			fmt.Fprintf(os.Stderr, "offlinebox %s: %v\n", name, err)
			var ee *exitError
			if errors.As(err, &ee) {
				os.Exit(ee.code)
			}
			os.Exit(1)
		}
	}
	fmt.Fprintf(os.Stderr, "offlinebox: unknown subcommand %q\n\n", name)
	usage(os.Stderr)
	os.Exit(2)
}
