package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStackConfigRejectsSettingsThatCannotWork(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		needSecret bool
		field      string
	}{
		{"defaults are valid for a worker", nil, false, ""},
		{"the API needs a secret", nil, true, "-jwt-secret"},
		{"a short secret", []string{"-jwt-secret", "short"}, true, "-jwt-secret"},
		{"a long enough secret", []string{"-jwt-secret", "0123456789abcdef"}, true, ""},
		{"no broker", []string{"-kafka", " , "}, false, "-kafka"},
		{"several redis without cluster mode", []string{"-redis", "a:1,b:2"}, false, "-redis"},
		{"several redis in cluster mode", []string{"-redis", "a:1,b:2", "-redis-cluster"}, false, ""},
		{"a redis URL", []string{"-redis", "redis://127.0.0.1:6379/2"}, false, ""},
		{"a redis that is no address", []string{"-redis", "localhost"}, false, "-redis"},
		{"a hot redis URL", []string{"-hot-redis", "redis://user:pw@127.0.0.1:6380/1"}, false, ""},
		{"a hot redis cluster", []string{"-hot-redis", "a:1,b:2"}, false, ""},
		{"a hot redis URL with a bad database", []string{"-hot-redis", "redis://127.0.0.1:6380/x"}, false, "-hot-redis"},
		{"no partitions", []string{"-partitions", "0"}, false, "-partitions"},
		{"negative session timeout", []string{"-session-timeout", "-1s"}, false, "-session-timeout"},
		{"the binary live bus format", []string{"-live-bus-format", "binary"}, false, ""},
		{"an unknown live bus format", []string{"-live-bus-format", "protobuf"}, false, "-live-bus-format"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OFFLINEBOX_JWT_SECRET", "")
			t.Setenv(envFileVar, "none")
			c, _, err := parseStack("test", tc.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = c.validate(tc.needSecret)
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case tc.field != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.field)):
				t.Fatalf("want an error naming %s, got %v", tc.field, err)
			}
		})
	}
}

func TestServersBindToLoopbackByDefault(t *testing.T) {
	t.Setenv("OFFLINEBOX_LISTEN", "")
	t.Setenv("OFFLINEBOX_METRICS_LISTEN", "")
	c, _, err := parseStack("test", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{c.Listen, c.MetricsListen} {
		if !strings.HasPrefix(addr, "127.0.0.1:") {
			t.Errorf("default listen address %q is not loopback", addr)
		}
	}
}

func TestSettingsComeFromFlagsThenEnvironmentThenTheDemoEnvFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), envFileName)
	err := writeEnvFile(path, "test", map[string]string{
		"OFFLINEBOX_REDIS": "127.0.0.1:1111", "OFFLINEBOX_KAFKA": "127.0.0.1:2222",
		"OFFLINEBOX_CLICKHOUSE": "127.0.0.1:3333", "OFFLINEBOX_JWT_SECRET": "secret-from-the-env-file",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envFileVar, path)
	t.Setenv("OFFLINEBOX_JWT_SECRET", "")
	t.Setenv("OFFLINEBOX_REDIS", "")
	t.Setenv("OFFLINEBOX_CLICKHOUSE", "")
	t.Setenv("OFFLINEBOX_KAFKA", "127.0.0.1:4444")
	c, _, err := parseStack("test", []string{"-clickhouse", "127.0.0.1:5555"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{"redis": c.Redis, "kafka": c.Kafka, "clickhouse": c.ClickHouse, "secret": c.JWTSecret}
	want := map[string]string{"redis": "127.0.0.1:1111", "kafka": "127.0.0.1:4444", "clickhouse": "127.0.0.1:5555", "secret": "secret-from-the-env-file"}
	for k := range want {
		if got[k] != want[k] {
			t.Errorf("%s = %q, want %q", k, got[k], want[k])
		}
	}
	if from := c.from("redis"); !strings.Contains(from, path) {
		t.Errorf("redis origin %q does not name the env file", from)
	}
	if from := c.from("kafka"); !strings.Contains(from, "OFFLINEBOX_KAFKA") {
		t.Errorf("kafka origin %q does not name the variable", from)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("env file mode %v (%v), want 0600: it holds the secret", fi.Mode().Perm(), err)
	}
}

func TestHelpNeverPrintsSecretsFromTheEnvironment(t *testing.T) {
	const secret, password = "do-not-print-this-secret", "do-not-print-this-password"
	t.Setenv("OFFLINEBOX_JWT_SECRET", secret)
	t.Setenv("OFFLINEBOX_CLICKHOUSE_PASSWORD", password)
	t.Setenv(envFileVar, "none")
	var out bytes.Buffer
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	fs.SetOutput(&out)
	var c stackConfig
	c.bind(fs)
	var lo logOptions
	lo.bind(fs)
	if err := fs.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	if s := out.String(); !strings.Contains(s, "-jwt-secret") || strings.Contains(s, secret) || strings.Contains(s, password) {
		t.Fatalf("help does not list -jwt-secret or shows a secret:\n%s", s)
	}
}

func TestLogFlagsChooseTheFormatAndLevelAndGoRedisWritesThroughThem(t *testing.T) {
	defer slog.SetDefault(slog.Default())
	var buf bytes.Buffer
	if err := (logOptions{format: "json", level: "warn"}).apply(&buf); err != nil {
		t.Fatal(err)
	}
	slog.Info("hidden below warn")
	slog.Warn("shown", "store", "redis")
	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &line); err != nil || line["msg"] != "shown" {
		t.Fatalf("want one JSON line of the warning, got %q (%v)", buf.String(), err)
	}

	buf.Reset()
	if err := (logOptions{format: "text", level: "debug"}).apply(&buf); err != nil {
		t.Fatal(err)
	}
	// A real go-redis line: its pool cannot dial a closed port.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer rdb.Close()
	_ = rdb.Ping(context.Background()).Err()
	if s := buf.String(); !strings.Contains(s, "level=DEBUG") || !strings.Contains(s, "component=go-redis") {
		t.Fatalf("go-redis did not log through slog at debug:\n%s", s)
	}

	for _, bad := range []logOptions{{format: "xml", level: "info"}, {format: "text", level: "loud"}} {
		if err := bad.apply(&buf); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
