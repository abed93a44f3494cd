// Command storm measures a reconnect storm: 100, then 500, then 1,000 users
// come back at once, each with at least 10,000 pending messages across
// their conversations, and each reads the conversation list, syncs once
// and acks what it got (what a user waits for before the first screen).
//
//	go run ./bench/storm [--scale full|small|0.3] [--json]
//
// The messages go through Kafka and the fanout worker first. Every level
// uses fresh devices of the same users, so each level finds the same
// backlog.
package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

type options struct {
	levels     []int
	pending    int
	groups     int
	partitions int
	retries    int
	// cpuprofile, when set, receives a CPU profile of the API server over
	// the levels (it starts after the seeding: that is not what a
	// reconnect costs).
	cpuprofile string
	// memprofile, when set, receives the API server's allocations (the
	// allocs profile) over its life, written when it stops.
	memprofile string
	// clientcpuprofile, when set, receives a CPU profile of this process
	// (the clients) over the levels.
	clientcpuprofile string
	// baseline is a storm program built from another tree; its API server
	// serves the same data beside ours, and every level runs against both.
	baseline string
	// baselineName says what the baseline is, in the results.
	baselineName string
}

type level struct {
	Users           int     `json:"users"`
	P50MS           float64 `json:"p50_ms"`
	P99MS           float64 `json:"p99_ms"`
	MaxMS           float64 `json:"max_ms"`
	Errors          int     `json:"errors"`
	Retries503      int     `json:"retries_503"`
	WallMS          float64 `json:"wall_ms"`
	CatchupsPerSec  float64 `json:"catchups_per_sec"`
	FirstBytesAvg   float64 `json:"first_response_bytes_avg"`
	MentionsMissing int     `json:"mentions_missing"`
	// RedisBytesOutPerReconnect: what Redis sent per reconnect (all its
	// clients), to set against the answer's size.
	RedisBytesOutPerReconnect float64 `json:"redis_bytes_out_per_reconnect"`
	// RedisReadsPerReconnect: the reads Redis's event loop served per
	// reconnect, about its round trips (a pipeline is one).
	RedisReadsPerReconnect float64 `json:"redis_reads_per_reconnect"`
	// ServerCPUMSPerReconnect: the API process's user+system CPU over the
	// level, per reconnect (refused and retried requests included). It is
	// the stable figure: wall time swings with whatever else the cores do.
	ServerCPUMSPerReconnect float64 `json:"server_cpu_ms_per_reconnect"`
	// ClientCPUMSPerReconnect: this process's CPU over the level (the
	// clients, the idle fanout and broker), per reconnect: the share of the
	// cores the servers did not get.
	ClientCPUMSPerReconnect float64 `json:"client_cpu_ms_per_reconnect"`
	// RedisCPUMSPerReconnect: Redis's own CPU over the level, per reconnect.
	RedisCPUMSPerReconnect float64 `json:"redis_cpu_ms_per_reconnect"`
	// RedisCalls: per command, calls and time inside Redis per reconnect.
	RedisCalls map[string]redisCalls `json:"redis_calls_per_reconnect"`
}

type redisCalls struct {
	Calls float64 `json:"calls"`
	MS    float64 `json:"ms"`
}

type result struct {
	harness.Header
	Users          int     `json:"users"`
	PendingPerUser int     `json:"pending_per_user"`
	Conversations  int     `json:"conversations_per_user"`
	SeedMessages   int     `json:"seed_messages"`
	SeedMS         float64 `json:"seed_ms"`
	APIMaxInFlight int     `json:"api_max_in_flight"`
	Levels         []level `json:"levels"`
	// BaselineLevels are the same levels against the baseline's server,
	// in the same run (with -baseline).
	BaselineLevels  []level       `json:"baseline_levels,omitempty"`
	Baseline        string        `json:"baseline,omitempty"`
	CatchupsPerSec  float64       `json:"catchups_per_sec"`
	Embedded        []string      `json:"embedded"`
	Table           []harness.Row `json:"table"`
	Notes           []string      `json:"notes"`
	ErrorsAllLevels int           `json:"errors"`
}

func main() {
	if harness.AsChild(serverEnv, "storm API server", runServer) {
		return
	}
	var o options
	var levels string
	f := harness.Parse("storm", harness.ScaleFull, func(fs *flag.FlagSet) {
		fs.StringVar(&levels, "levels", "100,500,1000", "users reconnecting at once, per level, at full scale")
		fs.IntVar(&o.pending, "pending", 10000, "pending messages per user at full scale")
		fs.IntVar(&o.groups, "groups", 20, "groups every user is in (the pending messages are spread over them)")
		fs.IntVar(&o.partitions, "partitions", 8, "partitions of each topic (embedded Kafka)")
		fs.IntVar(&o.retries, "retries", 5, "times a client retries a 503 after its Retry-After")
		fs.StringVar(&o.baseline, "baseline", "", "a storm program built from the baseline tree: its API server runs beside ours on the same data and every level runs against both, in turn")
		fs.StringVar(&o.baselineName, "baseline-name", "main", "what the -baseline program was built from, for the results")
		fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the API server process over the levels to this file")
		fs.StringVar(&o.clientcpuprofile, "client-cpuprofile", "", "write a CPU profile of the clients (this process) over the levels to this file")
		fs.StringVar(&o.memprofile, "memprofile", "", "write the API server process's allocations (allocs profile) to this file when it stops")
	})
	for _, n := range harness.Counts("storm", "levels", levels, 1, "a user count") {
		o.levels = append(o.levels, f.Scaled(n, 5))
	}
	o.pending = f.Scaled(o.pending, 200)
	harness.RunOnStack("storm", f, harness.Needs{Kafka: true, Partitions: int32(o.partitions)},
		func(ctx context.Context, log *harness.Log, st *harness.Stack) error { return run(ctx, f, o, log, st) })
}

func run(ctx context.Context, f *harness.Flags, o options, log *harness.Log, st *harness.Stack) error {
	users := 0
	for _, n := range o.levels {
		users = max(users, n)
	}
	res := &result{Header: harness.NewHeader("storm", f.Scale),
		Users: users, Embedded: st.Embedded}
	if o.baseline != "" {
		res.Baseline = o.baselineName
	}
	s := &storm{f: f, o: o, st: st, log: log, users: users, res: res}
	defer s.stop()
	if err := s.seed(ctx); err != nil {
		return err
	}
	if o.clientcpuprofile != "" {
		stop, err := harness.StartCPUProfile(o.clientcpuprofile)
		if err != nil {
			return err
		}
		defer stop()
	}
	for i, n := range o.levels {
		ours := func() error {
			lv, err := s.level(ctx, s.api, n, fmt.Sprintf("storm%d", i))
			if err != nil {
				return err
			}
			res.Levels = append(res.Levels, lv)
			res.ErrorsAllLevels += lv.Errors
			res.CatchupsPerSec = lv.CatchupsPerSec
			return nil
		}
		base := func() error {
			if s.base == nil {
				return nil
			}
			lv, err := s.level(ctx, s.base, n, fmt.Sprintf("storm%d-baseline", i))
			res.BaselineLevels = append(res.BaselineLevels, lv)
			return err
		}
		// In turn, the order swapped each level, so that neither server
		// always meets the warmer caches or the quieter moment.
		steps := []func() error{ours, base}
		if i%2 == 1 {
			steps[0], steps[1] = steps[1], steps[0]
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
	}
	res.Notes = []string{
		"a reconnect is GET /v1/conversations, POST /v1/sync without cursors (a fresh device: everything since " +
			"joining is pending) and POST /v1/ack of what it got; p50/p99 are of whole reconnects",
		"all users of a level start together behind a barrier; a 503 (server busy) is retried after Retry-After, " +
			"up to --retries times; errors are reconnects that still failed",
		"catchups_per_sec: reconnects completed per second of the level's wall time; catchups_per_sec at the top " +
			"level is the largest level's",
		"clients and server share the machine's cores; the API server is its own process, so that " +
			"server_cpu_ms_per_reconnect (its user+system CPU over the level / users) leaves the clients out; " +
			"redis_cpu_ms_per_reconnect is Redis's, and redis_calls_per_reconnect its INFO commandstats",
	}
	if s.base != nil {
		res.Notes = append(res.Notes, "baseline_levels (the table's baseline column): the same levels against the API server of "+
			res.Baseline+", started beside ours on the same data; each level runs against both in turn, the order swapped "+
			"each level, on fresh devices")
	}
	res.Table = printTable(res)
	return harness.EmitJSON(f.JSON, res)
}

func printTable(r *result) []harness.Row {
	var rows []harness.Row
	for i, lv := range r.Levels {
		// b formats the baseline's figure of the same level ("" without one).
		b := func(f func(level) string) string {
			if i >= len(r.BaselineLevels) {
				return ""
			}
			return f(r.BaselineLevels[i])
		}
		ms := func(v func(level) float64, prec int) func(level) string {
			return func(l level) string { return fmt.Sprintf("%.*f ms", prec, v(l)) }
		}
		p50 := ms(func(l level) float64 { return l.P50MS }, 0)
		p99 := ms(func(l level) float64 { return l.P99MS }, 0)
		errs := func(l level) string { return fmt.Sprint(l.Errors) }
		retries := func(l level) string { return fmt.Sprint(l.Retries503) }
		missing := func(l level) string { return fmt.Sprint(l.MentionsMissing) }
		rate := func(l level) string { return fmt.Sprintf("%.1f", l.CatchupsPerSec) }
		first := func(l level) string { return fmt.Sprintf("%.1f KB", l.FirstBytesAvg/1000) }
		redisOut := func(l level) string { return fmt.Sprintf("%.1f KB", l.RedisBytesOutPerReconnect/1000) }
		redisReads := func(l level) string { return fmt.Sprintf("%.1f", l.RedisReadsPerReconnect) }
		cpu := ms(func(l level) float64 { return l.ServerCPUMSPerReconnect }, 2)
		redisCPU := ms(func(l level) float64 { return l.RedisCPUMSPerReconnect }, 2)
		clientCPU := ms(func(l level) float64 { return l.ClientCPUMSPerReconnect }, 2)
		p := fmt.Sprintf("%d users at once: ", lv.Users)
		cpuRow := harness.Info(p+"server CPU per reconnect", cpu(lv), b(cpu))
		if i < len(r.BaselineLevels) {
			half := r.BaselineLevels[i].ServerCPUMSPerReconnect / 2
			cpuRow = harness.Check(cpuRow.Metric, cpuRow.Ours, cpuRow.Baseline,
				fmt.Sprintf("<= %.2f ms (half the baseline's)", half), lv.ServerCPUMSPerReconnect <= half)
		}
		rows = append(rows,
			harness.Info(p+"p50", p50(lv), b(p50)),
			harness.Check(p+"p99", p99(lv), b(p99), "<= 2000 ms (pull P99)", lv.P99MS <= 2000),
			harness.Check(p+"errors", errs(lv), b(errs), "0", lv.Errors == 0),
			harness.Info(p+"503 retries", retries(lv), b(retries)),
			harness.Check(p+"pending @mentions missing from first response", missing(lv), b(missing), "0",
				lv.MentionsMissing == 0),
			harness.Info(p+"catch-ups/s", rate(lv), b(rate)),
			harness.Info(p+"first response avg", first(lv), b(first)),
			harness.Info(p+"Redis bytes sent per reconnect", redisOut(lv), b(redisOut)),
			harness.Info(p+"Redis round trips per reconnect", redisReads(lv), b(redisReads)),
			cpuRow,
			harness.Info(p+"Redis CPU per reconnect", redisCPU(lv), b(redisCPU)),
			harness.Info(p+"client CPU per reconnect", clientCPU(lv), b(clientCPU)))
	}
	title := ""
	if r.Baseline != "" {
		title = ", baseline " + r.Baseline + " in the same run"
	}
	harness.PrintTable(fmt.Sprintf("storm: reconnects with %d pending messages each (scale %g)%s", r.PendingPerUser, r.Scale, title), rows)
	return rows
}
