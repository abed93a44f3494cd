// Command chaos is offlinebox's fault suite: "slow is acceptable, missing
// is not", tested. Each scenario brings up the pipeline (fanout workers as
// real processes of ./cmd/offlinebox; convindex, history and the API in
// this process) over one redis-server with the append-only file, one
// clickhouse-server and a fresh kfake broker, plays a checker workload
// (package checker: producers, and simulated devices that crash, go
// offline and come back), breaks something while the traffic flows, then
// lets every device catch up and compares what each stored with what was
// sent, runs the invariant checker (package verify) on Redis, counts the
// history in ClickHouse and the dead letters.
//
//	go run ./bench/chaos [--json] [--scale 0.3] [--scenarios fanout-kill,poison] [--clickhouse-outage 30s]
//
// Progress goes to stderr, a table at the end; with --json the last line
// of stdout is one JSON object: every scenario and the totals. Everything
// listens on 127.0.0.1 and every scenario stops by itself.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/offlinebox/offlinebox/bench/checker"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

// totals sum the scenarios.
type totals struct {
	Scenarios int `json:"scenarios"`
	Sent      int `json:"sent"`
	checker.Delivery
	VerifyOK  bool `json:"verify_ok"`
	HistoryOK bool `json:"history_ok"`
	OK        bool `json:"ok"`
}

type output struct {
	Benchmark string          `json:"benchmark"`
	Scale     float64         `json:"scale"`
	Machine   harness.Machine `json:"machine"`
	Outage    string          `json:"clickhouse_outage"`
	Stream    string          `json:"stream_duration"`
	Scenarios []result        `json:"scenarios"`
	Totals    totals          `json:"totals"`
	Table     []harness.Row   `json:"table"`
	Notes     []string        `json:"notes"`
}

func main() {
	var o options
	var list string
	var jsonOut bool
	fs := flag.NewFlagSet("chaos", flag.ExitOnError)
	scale := 1.0
	fs.Var(harness.ScaleFlag(&scale), "scale", "traffic size: small, full or a number in (0, 1]; full (1) is about 3,000 records per scenario over 20 s")
	fs.BoolVar(&jsonOut, "json", false, "print one JSON object with the results on the last line of stdout")
	fs.StringVar(&list, "scenarios", "", "comma-separated scenarios to run (default: all): "+strings.Join(names(), ","))
	fs.DurationVar(&o.outage, "clickhouse-outage", 30*time.Second, "how long clickhouse-server stays stopped")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the workloads")
	fs.StringVar(&o.dir, "dir", "", "parent folder of the servers' data (default: the system's temporary folder)")
	fs.BoolVar(&o.keep, "keep", false, "keep the servers' data and the worker processes' logs")
	_ = fs.Parse(os.Args[1:])
	o.scale, o.scenarios = scale, splitList(list)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out, err := run(ctx, o, harness.NewLog())
	if err != nil {
		harness.Fail("chaos", err)
	}
	out.Table = tableRows(out)
	harness.PrintTable("chaos: faults while traffic flows", out.Table)
	if err := harness.EmitJSON(jsonOut, out); err != nil {
		harness.Fail("chaos", err)
	}
	if !out.Totals.OK {
		os.Exit(1)
	}
}

func names() []string {
	var out []string
	for _, s := range scenarios() {
		out = append(out, s.name)
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// pick returns the scenarios asked for, in the suite's order.
func pick(want []string) ([]scenario, error) {
	all := scenarios()
	if len(want) == 0 {
		return all, nil
	}
	var out []scenario
	for _, w := range want {
		found := false
		for _, s := range all {
			if s.name == w {
				out, found = append(out, s), true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown scenario %q (known: %s)", w, strings.Join(names(), ", "))
		}
	}
	return out, nil
}

// run plays the chosen scenarios on one suite and sums them up.
func run(ctx context.Context, o options, log *harness.Log) (*output, error) {
	list, err := pick(o.scenarios)
	if err != nil {
		return nil, err
	}
	o.duration = max(3*time.Second, time.Duration(float64(20*time.Second)*o.scale))
	s, err := startSuite(ctx, o, log)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	out := &output{Benchmark: "chaos", Scale: o.scale, Machine: harness.ThisMachine(), Outage: o.outage.String(),
		Stream: o.duration.String(), Notes: notes()}
	out.Totals = totals{VerifyOK: true, HistoryOK: true, OK: true}
	for _, sc := range list {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		log.Printf("scenario %s: %s", sc.name, sc.about)
		r := s.runScenario(ctx, sc)
		if r.Error != "" {
			log.Printf("scenario %s FAILED: %s", sc.name, r.Error)
		}
		out.Scenarios = append(out.Scenarios, r)
		t := &out.Totals
		t.Scenarios++
		t.Sent += r.Sent
		t.Delivery.Add(r.Delivery)
		t.VerifyOK = t.VerifyOK && r.VerifyOK
		t.HistoryOK = t.HistoryOK && r.HistoryOK
		t.OK = t.OK && r.OK
	}
	return out, nil
}

func notes() []string {
	return []string{
		"sent: distinct stored records (messages and membership changes) in im.messages; resends, QoS 0 and poison records are counted apart",
		"expected/delivered/lost: (device, seq) pairs each device is owed as a member at the end, and whether it stored them after its final catch-up",
		"duplicates: one client_msg_id stored by a device under two seqs; redelivered (allowed) counts messages received again before an ack",
		"redis-restart is a SIGTERM restart: redis-server rewrites nothing and fsyncs the AOF on shutdown, so it proves the workers wait for Redis and lose nothing across a clean restart; a SIGKILL with appendfsync everysec may lose the last second of writes, which only appendfsync always rules out",
		"fanout workers are real processes of ./cmd/offlinebox; kill -9 gives them no chance to commit",
	}
}

// tableRows is one row per scenario and the totals.
func tableRows(out *output) []harness.Row {
	rows := make([]harness.Row, 0, len(out.Scenarios)+1)
	for _, r := range out.Scenarios {
		rows = append(rows, harness.Check(r.Name,
			fmt.Sprintf("sent %d, delivered %d/%d, lost %d, dup %d, ooo %d, verify %v, history missing %d, dead %d/%d, seq reused %d",
				r.Sent, r.Delivered, r.Expected, r.Lost, r.Duplicates, r.OutOfOrder, r.VerifyOK, r.History.Missing, r.DeadLetters, r.Poison,
				r.Seqs.Reused+r.Seqs.Unlogged),
			"", "lost 0, dup 0, verify ok, seq reused 0", r.OK))
	}
	t := out.Totals
	rows = append(rows, harness.Check("total", fmt.Sprintf("sent %d, delivered %d/%d, lost %d, dup %d", t.Sent, t.Delivered, t.Expected, t.Lost, t.Duplicates),
		"", "lost 0, dup 0", t.OK))
	return rows
}
