package main

import (
	"context"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
)

//go:embed baseline_page.lua
var baselinePageLua string

// Targets of the issue that set this benchmark.
const (
	targetListP99MS  = 20
	slowlogThreshold = 5000 // µs
	pageLimit        = 50
)

type phase struct {
	FirstPageP50MS float64 `json:"first_page_p50_ms"`
	FirstPageP99MS float64 `json:"first_page_p99_ms"`
	DeepPageP50MS  float64 `json:"deep_page_p50_ms"`
	DeepPageP99MS  float64 `json:"deep_page_p99_ms"`
	// Other users' first page while the big user lists without pause.
	OthersP50MS float64 `json:"others_p50_ms"`
	OthersP99MS float64 `json:"others_p99_ms"`
	// Redis main-thread CPU per list call of the big user (first and deep
	// pages alike): unlike wall times, not inflated by a busy machine.
	CPUPerCallMS float64 `json:"redis_cpu_per_call_ms"`
	// Commands Redis logged as slower than 5 ms during the phase.
	SlowCommands int   `json:"slow_commands"`
	SlowestUS    int64 `json:"slowest_us"`
}

type result struct {
	Benchmark     string          `json:"benchmark"`
	Scale         float64         `json:"scale"`
	Machine       harness.Machine `json:"machine"`
	Conversations int             `json:"conversations"`
	Samples       int             `json:"samples"`
	SeedMS        float64         `json:"seed_ms"`
	Ours          phase           `json:"ours"`
	Baseline      phase           `json:"baseline"`
	// Building the list indexes of the big user's inbox as an older store
	// left it (one bounded step per round trip).
	IndexBuildMS     float64 `json:"index_build_ms"`
	IndexBuildSlow   int     `json:"index_build_slow_commands"`
	IndexBuildSlowUS int64   `json:"index_build_slowest_us"`
}

// lister lists one page of a user's conversations.
type lister func(ctx context.Context, user string, after readpath.ListCursor) error

func run(ctx context.Context, f *harness.Flags, o options, log *harness.Log, st *harness.Stack) error {
	rdb := redis.NewClient(&redis.Options{Addr: st.RedisAddr, PoolSize: 16})
	defer rdb.Close()
	s, err := redisstore.New(rdb, redisstore.Config{Prefix: f.Prefix})
	if err != nil {
		return err
	}
	n := f.Scaled(100_000, 1000)
	res := &result{Benchmark: "convlist", Scale: f.Scale, Machine: harness.ThisMachine(), Conversations: n, Samples: o.samples}

	start := time.Now()
	if err := seedDirects(ctx, s, bigUser, n); err != nil {
		return err
	}
	for g := range largeGroups {
		if err := seedLarge(ctx, s, bigUser, fmt.Sprint("big-", g)); err != nil {
			return err
		}
	}
	for u := range otherUsers {
		if err := seedDirects(ctx, s, fmt.Sprint("user", u), otherConvs); err != nil {
			return err
		}
	}
	res.SeedMS = harness.Millis(time.Since(start))
	log.Printf("seeded %d conversations of %s and %d of %d other users in %.0f ms", n, bigUser, otherConvs, otherUsers, res.SeedMS)

	reads := readpath.New(redisstore.NewInboxRouter(s, nil, 0)) // the path the API lists through
	ours := func(ctx context.Context, user string, after readpath.ListCursor) error {
		_, err := reads.ListConversations(ctx, user, "", after, pageLimit)
		return err
	}
	baselineScript := redis.NewScript(baselinePageLua)
	k := s.Keys()
	baseline := func(ctx context.Context, user string, after readpath.ListCursor) error {
		score, conv := "+inf", ""
		if after.Conv != "" {
			score, conv = strconv.FormatInt(after.Activity, 10), after.Conv
		}
		keys := []string{k.ConvList(user), k.Inbox(user), k.Previews(user), k.Mentions(user), k.Cursor(user, ""), k.Profile(user)}
		return baselineScript.Run(ctx, rdb, keys, score, conv, pageLimit+1).Err()
	}

	// The index build first: the big user's inbox as a store older than
	// the indexes left it.
	if err := rdb.Del(ctx, k.MentionIndex(bigUser)).Err(); err != nil {
		return err
	}
	if err := rdb.HDel(ctx, k.Inbox(bigUser), redisstore.InboxLargeGroups, redisstore.InboxIndexed).Err(); err != nil {
		return err
	}
	if err := resetSlowlog(ctx, rdb); err != nil {
		return err
	}
	start = time.Now()
	if err := s.BuildListIndex(ctx, bigUser); err != nil {
		return err
	}
	res.IndexBuildMS = harness.Millis(time.Since(start))
	if res.IndexBuildSlow, res.IndexBuildSlowUS, err = slowlog(ctx, rdb); err != nil {
		return err
	}
	log.Printf("built the list indexes of %d conversations in %.0f ms", n, res.IndexBuildMS)

	if res.Ours, err = measure(ctx, rdb, ours, n, o.samples, log, "ours"); err != nil {
		return err
	}
	if res.Baseline, err = measure(ctx, rdb, baseline, n, o.baselineSamples, log, "baseline"); err != nil {
		return err
	}
	report(res)
	return harness.EmitJSON(f.JSON, res)
}

// measure times the big user's first and deep pages, then the other users'
// lists while the big user lists without pause, and reads what SLOWLOG
// caught meanwhile.
func measure(ctx context.Context, rdb *redis.Client, list lister, n, samples int, log *harness.Log, name string) (phase, error) {
	var p phase
	if err := resetSlowlog(ctx, rdb); err != nil {
		return p, err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var first, deep, others []time.Duration
	cpu0, err := mainThreadCPU(ctx, rdb)
	if err != nil {
		return p, err
	}
	for range samples {
		t := time.Now()
		if err := list(ctx, bigUser, readpath.ListCursor{}); err != nil {
			return p, fmt.Errorf("%s: list %s: %w", name, bigUser, err)
		}
		first = append(first, time.Since(t))
		i := rng.IntN(n)
		t = time.Now()
		if err := list(ctx, bigUser, readpath.ListCursor{Activity: startMS + int64(i), Conv: fmt.Sprint(bigUser, "-d", i)}); err != nil {
			return p, fmt.Errorf("%s: list %s deep: %w", name, bigUser, err)
		}
		deep = append(deep, time.Since(t))
	}
	cpu1, err := mainThreadCPU(ctx, rdb)
	if err != nil {
		return p, err
	}
	p.CPUPerCallMS = harness.Millis((cpu1 - cpu0) / time.Duration(2*samples))
	busy, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for busy.Err() == nil {
			_ = list(busy, bigUser, readpath.ListCursor{})
		}
	}()
	for i := range samples {
		t := time.Now()
		if err := list(ctx, fmt.Sprint("user", i%otherUsers), readpath.ListCursor{}); err != nil {
			stop()
			wg.Wait()
			return p, fmt.Errorf("%s: list other user: %w", name, err)
		}
		others = append(others, time.Since(t))
	}
	stop()
	wg.Wait()
	p.FirstPageP50MS, p.FirstPageP99MS = harness.Percentile(first, 50), harness.Percentile(first, 99)
	p.DeepPageP50MS, p.DeepPageP99MS = harness.Percentile(deep, 50), harness.Percentile(deep, 99)
	p.OthersP50MS, p.OthersP99MS = harness.Percentile(others, 50), harness.Percentile(others, 99)
	if p.SlowCommands, p.SlowestUS, err = slowlog(ctx, rdb); err != nil {
		return p, err
	}
	log.Printf("%s: first page p99 %.2f ms, deep p99 %.2f ms, others p99 %.2f ms, %d commands over 5 ms",
		name, p.FirstPageP99MS, p.DeepPageP99MS, p.OthersP99MS, p.SlowCommands)
	return p, nil
}

// mainThreadCPU is the CPU time redis-server's main thread has used.
func mainThreadCPU(ctx context.Context, rdb *redis.Client) (time.Duration, error) {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, fmt.Errorf("read INFO cpu: %w", err)
	}
	var total time.Duration
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user_main_thread" || k == "used_cpu_sys_main_thread") {
			sec, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("INFO cpu line %q: %w", line, err)
			}
			total += time.Duration(sec * float64(time.Second))
		}
	}
	return total, nil
}

func resetSlowlog(ctx context.Context, rdb *redis.Client) error {
	if err := rdb.ConfigSet(ctx, "slowlog-log-slower-than", strconv.Itoa(slowlogThreshold)).Err(); err != nil {
		return fmt.Errorf("set slowlog threshold: %w", err)
	}
	if err := rdb.ConfigSet(ctx, "slowlog-max-len", "10000").Err(); err != nil {
		return fmt.Errorf("set slowlog length: %w", err)
	}
	return rdb.Do(ctx, "SLOWLOG", "RESET").Err()
}

// slowlog counts the logged commands and the slowest one's µs.
func slowlog(ctx context.Context, rdb *redis.Client) (count int, slowest int64, err error) {
	logs, err := rdb.SlowLogGet(ctx, -1).Result()
	if err != nil {
		return 0, 0, fmt.Errorf("read slowlog: %w", err)
	}
	for _, l := range logs {
		slowest = max(slowest, l.Duration.Microseconds())
	}
	return len(logs), slowest, nil
}

func report(r *result) {
	f := func(v float64) string { return fmt.Sprintf("%.2f ms", v) }
	rows := []harness.Row{
		harness.Check("big user first page p99", f(r.Ours.FirstPageP99MS), f(r.Baseline.FirstPageP99MS),
			fmt.Sprintf("≤ %d ms", targetListP99MS), r.Ours.FirstPageP99MS <= targetListP99MS),
		harness.Check("big user deep page p99", f(r.Ours.DeepPageP99MS), f(r.Baseline.DeepPageP99MS),
			fmt.Sprintf("≤ %d ms", targetListP99MS), r.Ours.DeepPageP99MS <= targetListP99MS),
		harness.Info("big user first page p50", f(r.Ours.FirstPageP50MS), f(r.Baseline.FirstPageP50MS)),
		harness.Check("other users' list p99 meanwhile", f(r.Ours.OthersP99MS), f(r.Baseline.OthersP99MS),
			fmt.Sprintf("≤ %d ms", targetListP99MS), r.Ours.OthersP99MS <= targetListP99MS),
		harness.Check("commands over 5 ms (SLOWLOG)", strconv.Itoa(r.Ours.SlowCommands), strconv.Itoa(r.Baseline.SlowCommands),
			"0", r.Ours.SlowCommands == 0),
		harness.Check("Redis CPU per big-user list call", fmt.Sprintf("%.3f ms", r.Ours.CPUPerCallMS), fmt.Sprintf("%.3f ms", r.Baseline.CPUPerCallMS),
			"≤ 5 ms", r.Ours.CPUPerCallMS <= 5),
		harness.Info("slowest command", fmt.Sprintf("%d µs", r.Ours.SlowestUS), fmt.Sprintf("%d µs", r.Baseline.SlowestUS)),
		harness.Check("index build of an older inbox: commands over 5 ms", strconv.Itoa(r.IndexBuildSlow), "", "0", r.IndexBuildSlow == 0),
		harness.Info("index build of an older inbox", fmt.Sprintf("%.0f ms", r.IndexBuildMS), ""),
	}
	harness.PrintTable(fmt.Sprintf("convlist: %d conversations, %d samples", r.Conversations, r.Samples), rows)
}
