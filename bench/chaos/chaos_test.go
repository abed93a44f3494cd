package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

// needServers skips (or, under `make test`, fails) when the servers the
// suite starts itself are not installed.
func needServers(t *testing.T) {
	t.Helper()
	for _, bin := range []string{"redis-server", "clickhouse-server"} {
		if _, err := exec.LookPath(bin); err == nil {
			continue
		}
		if _, err := os.Stat("/usr/sbin/" + bin); err == nil {
			continue
		}
		if os.Getenv("OFFLINEBOX_REQUIRE_SERVERS") == "1" {
			t.Fatalf("%s is not installed", bin)
		}
		t.Skipf("%s is not installed", bin)
	}
}

// TestEveryScenarioDeliversEverythingOnceAndVerifies is the short version
// of `go run ./bench/chaos`: every scenario at a tiny scale (about 300
// records each over 3 s) and a 5 s ClickHouse outage instead of 30 s.
func TestEveryScenarioDeliversEverythingOnceAndVerifies(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault suite takes about a minute")
	}
	needServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	out, err := run(ctx, options{scale: 0.05, outage: 5 * time.Second, seed: 7}, harness.NewLog())
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Scenarios) != len(scenarios()) {
		t.Fatalf("%d scenarios ran, want %d", len(out.Scenarios), len(scenarios()))
	}
	for _, r := range out.Scenarios {
		t.Run(r.Name, func(t *testing.T) {
			if r.Error != "" {
				t.Fatalf("scenario failed: %s", r.Error)
			}
			if r.Sent == 0 || r.Expected == 0 || r.Fault == "" {
				t.Fatalf("nothing was checked: sent %d, expected %d, fault %q", r.Sent, r.Expected, r.Fault)
			}
			if r.Lost != 0 || r.Duplicates != 0 || r.OutOfOrder != 0 || r.Unexpected != 0 {
				t.Errorf("lost %d, duplicates %d, out of order %d, unexpected %d; first problems: %v",
					r.Lost, r.Duplicates, r.OutOfOrder, r.Unexpected, r.Problems)
			}
			if !r.VerifyOK {
				t.Errorf("verify found problems: %v", r.VerifyProblems)
			}
			if !r.HistoryOK {
				t.Errorf("history: %+v", r.History)
			}
			if !r.SeqsOK || r.Seqs.Places == 0 {
				t.Errorf("seqs: %+v", r.Seqs)
			}
			if r.DeadLetters != r.Poison || r.DeadNoReason != 0 {
				t.Errorf("%d poison records, %d dead letters (%d without a reason)", r.Poison, r.DeadLetters, r.DeadNoReason)
			}
		})
	}
	if poison := find(out.Scenarios, "poison"); poison.Poison == 0 {
		t.Error("the poison scenario produced no poison record")
	}
	data, _ := json.Marshal(out.Totals)
	t.Logf("totals: %s", data)
}

func find(rs []result, name string) result {
	for _, r := range rs {
		if r.Name == name {
			return r
		}
	}
	return result{}
}
