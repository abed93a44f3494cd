package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/redis/go-redis/v9"
)

// logOptions are the -log-format and -log-level flags every subcommand
// has (env OFFLINEBOX_LOG_FORMAT, OFFLINEBOX_LOG_LEVEL).
type logOptions struct {
	format string
	level  string
}

func (o *logOptions) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.format, "log-format", env("OFFLINEBOX_LOG_FORMAT", "text"), "log format: text or json (env OFFLINEBOX_LOG_FORMAT)")
	fs.StringVar(&o.level, "log-level", env("OFFLINEBOX_LOG_LEVEL", "info"), "least level logged: debug, info, warn or error (env OFFLINEBOX_LOG_LEVEL)")
}

// apply makes the options the process's logger: slog's default, and the
// one go-redis writes through.
func (o logOptions) apply(w io.Writer) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.level)); err != nil {
		return fmt.Errorf("-log-level: %q is not debug, info, warn or error", o.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch strings.ToLower(o.format) {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return fmt.Errorf("-log-format: %q is not text or json", o.format)
	}
	log := slog.New(h)
	slog.SetDefault(log)
	redis.SetLogger(redisLogger{log: log.With("component", "go-redis")})
	return nil
}

// redisLogger sends go-redis's own lines (pool dial failures, cluster
// reloads) to slog at debug: each of them is about an error that the call
// which met it also returns, and that its caller logs or reports.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: "))
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// vcsCommit is the commit the binary was built from when the build could
// not stamp it itself (a git worktree, -buildvcs=false): `make build` sets
// it with -ldflags "-X main.vcsCommit=...".
var vcsCommit string

// version describes the build: module version, VCS revision and time.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "offlinebox (no build information)"
	}
	s := "offlinebox " + bi.Main.Version
	var rev, when, dirty string
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.time":
			when = kv.Value
		case "vcs.modified":
			if kv.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" && vcsCommit != "" {
		var modified bool
		if rev, modified = strings.CutSuffix(vcsCommit, "+dirty"); modified {
			dirty = "+dirty"
		}
	}
	if rev != "" {
		s += " commit " + rev[:min(12, len(rev))] + dirty
	} else {
		s += " (no commit: built without VCS information; `make build` stamps it)"
	}
	if when != "" {
		s += " " + when
	}
	return s + " " + bi.GoVersion
}
