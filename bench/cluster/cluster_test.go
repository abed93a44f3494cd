package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShortClusterRunLosesNothingThroughAnAPIKillAndAMasterFailover runs
// the program's short mode (3 masters with replicas, 3 brokers, 2 API
// nodes behind haproxy, workers twice over) and holds it to its result
// line: every fault converged with nothing lost or doubled.
func TestShortClusterRunLosesNothingThroughAnAPIKillAndAMasterFailover(t *testing.T) {
	if os.Getenv("OFFLINEBOX_REQUIRE_SERVERS") != "1" {
		t.Skip("needs the servers (OFFLINEBOX_REQUIRE_SERVERS=1)")
	}
	for _, bin := range []string{"haproxy", "redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed (scripts/ensure-packages.sh)", bin)
		}
	}
	dir := t.TempDir()
	bench := filepath.Join(dir, "cluster-bench")
	if out, err := exec.Command("go", "build", "-o", bench, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bench, "-short", "-json", "-dir", filepath.Join(dir, "run"), "-timeout", "7m")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var res result
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("no result line (%v): %v\nstderr:\n%s", runErr, err, stderr.String())
	}
	if runErr != nil || !res.OK {
		t.Errorf("run not ok (%v): %s\nstderr:\n%s", runErr, lines[len(lines)-1], stderr.String())
	}
	checks := []struct {
		name      string
		got, want int
	}{
		{"redis_masters", res.RedisMasters, 3},
		{"api_nodes", res.APINodes, 2},
		{"brokers", res.Brokers, 3},
		{"api processes", res.Processes["api"], 2},
		{"fanout processes", res.Processes["fanout"], 2},
		{"redis processes", res.Processes["redis"], 6},
		{"faults", len(res.Faults), 2},
		{"clickhouse_shards", res.ClickHouseShards, 2},
		{"clickhouse processes", res.Processes["clickhouse"], 2},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	for _, f := range res.Faults {
		if f.Lost != 0 || f.Duplicates != 0 || f.SeqsReused != 0 || !f.VerifyOK || f.Expected == 0 {
			t.Errorf("fault %s: expected %d lost %d duplicates %d seqs reused %d verify ok %v (%s)",
				f.Name, f.Expected, f.Lost, f.Duplicates, f.SeqsReused, f.VerifyOK, f.Error)
		}
	}
}
