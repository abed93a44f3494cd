package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/bench/checker"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// startTestEnv runs a scenario's system (one fanout process of a freshly
// built binary, convindex, history, the API logging to logger) on the
// shared test servers, under a key prefix and database of the test's own.
func startTestEnv(t *testing.T, logger *slog.Logger) *env {
	t.Helper()
	redisAddr, chAddr := testenv.RedisAddr(t), testenv.ClickHouseAddr(t)
	_, db := testenv.ClickHouse(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin, err := harness.BuildBinary(ctx, root, dir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEnv(ctx, envOptions{name: "test", dir: dir, bin: bin, redisAddr: redisAddr, chAddr: chAddr,
		fanouts: 1, logger: logger, prefix: testenv.UniquePrefix(t), database: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.stop)
	return e
}

// playSmall runs a small checker workload to its end and fails the test
// unless every device holds everything once.
func playSmall(t *testing.T, e *env, seed int64) *checker.Workload {
	t.Helper()
	w, err := checker.Generate(checker.Config{Seed: seed, Users: 5, Directs: 3, Groups: 2, GroupSize: 3,
		Messages: 120, APIMessages: 6, MentionPercent: 20, ResendPercent: 10, Joins: 1, Leaves: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := checker.Start(ctx, checker.RunConfig{Workload: w, Brokers: e.brokers, APIURL: e.apiURL, Token: e.token,
		Duration: time.Second, Drain: e.drain, Behaviour: checker.Behaviour{OfflineMax: 200 * time.Millisecond,
			CrashBeforeAckPercent: 10, ResendPercent: 50, ReadPercent: 30}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := run.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Expected == 0 {
		t.Fatalf("the workload itself failed: expected %d, lost %d, duplicates %d: %v", rep.Expected, rep.Lost, rep.Duplicates, rep.Problems)
	}
	return w
}

// do sends one request and returns the status, the Retry-After header and
// the body.
func do(t *testing.T, method, url, token string, body []byte) (int, string, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read the answer: %v", method, url, err)
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), data
}
