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
	"os"
	"strconv"
	"strings"

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
	// ServerCPUMSPerReconnect: the API process's user+system CPU over the
	// level, per reconnect (refused and retried requests included). It is
	// the stable figure: wall time swings with whatever else the cores do.
	ServerCPUMSPerReconnect float64 `json:"server_cpu_ms_per_reconnect"`
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
	Benchmark       string          `json:"benchmark"`
	Scale           float64         `json:"scale"`
	Machine         harness.Machine `json:"machine"`
	Bodies          string          `json:"bodies"`
	Users           int             `json:"users"`
	PendingPerUser  int             `json:"pending_per_user"`
	Conversations   int             `json:"conversations_per_user"`
	SeedMessages    int             `json:"seed_messages"`
	SeedMS          float64         `json:"seed_ms"`
	APIMaxInFlight  int             `json:"api_max_in_flight"`
	Levels          []level         `json:"levels"`
	CatchupsPerSec  float64         `json:"catchups_per_sec"`
	Embedded        []string        `json:"embedded"`
	Table           []harness.Row   `json:"table"`
	Notes           []string        `json:"notes"`
	ErrorsAllLevels int             `json:"errors"`
}

func main() {
	if os.Getenv(serverEnv) != "" {
		if err := runServer(); err != nil {
			fmt.Fprintln(os.Stderr, "storm API server:", err)
			os.Exit(1)
		}
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
		fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the API server process over the levels to this file")
	})
	for _, s := range strings.Split(levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			harness.Fail("storm", fmt.Errorf("-levels: %q is not a user count", s))
		}
		o.levels = append(o.levels, f.Scaled(n, 5))
	}
	o.pending = f.Scaled(o.pending, 200)
	harness.Run("storm", func(ctx context.Context) error { return run(ctx, f, o) })
}

func run(ctx context.Context, f *harness.Flags, o options) error {
	log := harness.NewLog()
	st, err := harness.StartStack(ctx, f, harness.Needs{Kafka: true, Partitions: int32(o.partitions)}, log)
	if err != nil {
		return err
	}
	defer st.Stop()
	users := 0
	for _, n := range o.levels {
		users = max(users, n)
	}
	res := &result{Benchmark: "storm", Scale: f.Scale, Machine: harness.ThisMachine(), Bodies: harness.BodyDescription,
		Users: users, Embedded: st.Embedded}
	s := &storm{f: f, o: o, st: st, log: log, users: users, res: res}
	defer s.stop()
	if err := s.seed(ctx); err != nil {
		return err
	}
	for i, n := range o.levels {
		lv, err := s.level(ctx, n, fmt.Sprintf("storm%d", i))
		if err != nil {
			return err
		}
		res.Levels = append(res.Levels, lv)
		res.ErrorsAllLevels += lv.Errors
		res.CatchupsPerSec = lv.CatchupsPerSec
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
	res.Table = printTable(res)
	return harness.EmitJSON(f.JSON, res)
}

func printTable(r *result) []harness.Row {
	var rows []harness.Row
	for _, lv := range r.Levels {
		p := fmt.Sprintf("%d users at once: ", lv.Users)
		rows = append(rows,
			harness.Info(p+"p50", fmt.Sprintf("%.0f ms", lv.P50MS), ""),
			harness.Check(p+"p99", fmt.Sprintf("%.0f ms", lv.P99MS), "", "<= 2000 ms (pull P99)", lv.P99MS <= 2000),
			harness.Check(p+"errors", fmt.Sprint(lv.Errors), "", "0", lv.Errors == 0),
			harness.Info(p+"503 retries", fmt.Sprint(lv.Retries503), ""),
			harness.Check(p+"pending @mentions missing from first response", fmt.Sprint(lv.MentionsMissing), "", "0",
				lv.MentionsMissing == 0),
			harness.Info(p+"catch-ups/s", fmt.Sprintf("%.1f", lv.CatchupsPerSec), ""),
			harness.Info(p+"first response avg", fmt.Sprintf("%.1f KB", lv.FirstBytesAvg/1000), ""),
			harness.Info(p+"Redis bytes sent per reconnect", fmt.Sprintf("%.1f KB", lv.RedisBytesOutPerReconnect/1000), ""),
			harness.Info(p+"server CPU per reconnect", fmt.Sprintf("%.2f ms", lv.ServerCPUMSPerReconnect), ""),
			harness.Info(p+"Redis CPU per reconnect", fmt.Sprintf("%.2f ms", lv.RedisCPUMSPerReconnect), ""))
	}
	harness.PrintTable(fmt.Sprintf("storm: reconnects with %d pending messages each (scale %g)", r.PendingPerUser, r.Scale), rows)
	return rows
}
