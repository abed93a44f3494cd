// Command report renders the JSON results of the benchmark programs
// (bench/results/<name>.json) as the Markdown table of
// bench/results/README.md, with SVG charts of the headline comparisons
// beside it. scripts/bench.sh runs it after the benchmarks.
//
//	go run ./bench/report [--dir bench/results]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

// benchmarks in the order of the report, with what each answers.
var benchmarks = []struct{ name, what string }{
	{"vip", "the founding scenario: a VIP back after 5 days, through Kafka, fanout, Redis and the API, next to the old flat inbox"},
	{"fanout", "the write path for groups of 50, 500 and 5,000 members, next to one round trip per message per recipient"},
	{"write", "the write path alone for a DM-heavy mix (70 % direct, 25 % groups of 3-50, 5 % groups of 500): Redis script time per message by kind and script, fanout CPU, beside a baseline commit in the same run"},
	{"storm", "100, 500 and 1,000 users reconnecting at once, each with 10,000+ pending messages"},
	{"history", "the ClickHouse sink and roaming pages, next to one INSERT per message"},
	{"live", "the live channel: devices online over two API processes receive a steady stream pushed through the pipeline and ack it, next to the same devices polling POST /v1/sync every second"},
	{"chaos", "the fault suite: kill -9 of fanout processes, rebalances, Redis and ClickHouse restarts, broker faults, poison records and resends while traffic flows, counted by what every simulated device stored"},
}

// result is what the report reads of every benchmark's JSON.
type result struct {
	Scale    float64         `json:"scale"`
	Machine  harness.Machine `json:"machine"`
	Bodies   string          `json:"bodies"`
	Table    []harness.Row   `json:"table"`
	Notes    []string        `json:"notes"`
	Embedded []string        `json:"embedded"`
}

func main() {
	dir := flag.String("dir", "bench/results", "folder of the <name>.json results; README.md is written there")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintf(os.Stderr, "report: %v\n", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	var sb strings.Builder
	var machine *harness.Machine
	var missed []string
	body := &strings.Builder{}
	for _, b := range benchmarks {
		data, err := os.ReadFile(filepath.Join(dir, b.name+".json"))
		if err != nil {
			fmt.Fprintf(body, "## %s\n\nNo result (%v).\n\n", b.name, err)
			continue
		}
		var r result
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%s.json: %w", b.name, err)
		}
		if machine == nil {
			machine = &r.Machine
		}
		fmt.Fprintf(body, "## %s (scale %g)\n\n%s. `go run ./bench/%s --json`; raw numbers in [%s.json](%s.json).\n\n",
			b.name, r.Scale, capitalise(b.what), b.name, b.name, b.name)
		body.WriteString("| metric | ours | baseline | target | met |\n| --- | --- | --- | --- | --- |\n")
		for _, row := range r.Table {
			fmt.Fprintf(body, "| %s | %s | %s | %s | %s |\n", cell(row.Metric), cell(row.Ours), cell(row.Baseline),
				cell(row.Target), cell(row.Met))
			if row.Met == "NO" {
				missed = append(missed, fmt.Sprintf("%s: %s is %s (target %s)", b.name, strings.TrimSpace(row.Metric), row.Ours, row.Target))
			}
		}
		body.WriteString("\n")
		charts, err := chartsFor(b.name, data)
		if err != nil {
			return err
		}
		for _, c := range charts {
			if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.svg()), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(body, "![%s](%s)\n\n", c.title, c.file)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(body, "- %s\n", n)
		}
		body.WriteString("\n")
	}
	sb.WriteString("# Benchmark results\n\n")
	fmt.Fprintf(&sb, "Written by `make bench` (scripts/bench.sh, then `go run ./bench/report`) on %s. ", time.Now().UTC().Format("2006-01-02"))
	sb.WriteString("The machine is shared and noisy: compare ratios (ours against the baseline measured in the same run), " +
		"not absolute times across runs.\n\n")
	if machine != nil {
		fmt.Fprintf(&sb, "Machine: `%s`; CPU %s, %d cores, %s memory; %s.\n\n", machine.Uname, machine.CPU, machine.Cores,
			machine.MemTotal, machine.Go)
	}
	sb.WriteString("Stores: embedded redis-server (no persistence), kfake (franz-go's in-process Kafka), clickhouse-server, " +
		"all on 127.0.0.1 and started by each program. Message bodies: " + harness.BodyDescription + "; client_msg_id a UUID.\n\n")
	if len(missed) > 0 {
		sb.WriteString("Targets missed in this run:\n\n")
		for _, m := range missed {
			fmt.Fprintf(&sb, "- %s\n", m)
		}
		sb.WriteString("\n")
	}
	sb.WriteString(body.String())
	return os.WriteFile(filepath.Join(dir, "README.md"), []byte(sb.String()), 0o644)
}

func cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.ReplaceAll(s, "|", "\\|")
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
