package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

// measurePipeline streams with no device online: what the servers spend
// on the stream whoever listens (fanout's scripts in redis-server, the
// push stage reading conversations), in both designs.
func (b *bench) measurePipeline(ctx context.Context, res *result) error {
	resetCommandStats(ctx, b.st.Redis)
	cpu0, t0, parts0 := b.cpu(), time.Now(), b.cpuParts()
	length := time.Duration(b.o.seconds * float64(time.Second))
	profiled := b.profilePhase(ctx, "pipeline", length)
	expected, err := b.stream(ctx, length, "pipeline")
	profiled()
	if err != nil {
		return err
	}
	if err := b.fan.WaitHandled(ctx, b.records, "pipeline", b.log); err != nil {
		return err
	}
	time.Sleep(time.Second) // the push stage reads what fanout produced last
	p := phase{Expected: expected, Seconds: harness.Round(time.Since(t0).Seconds(), 2), CPUSeconds: harness.Round((b.cpu() - cpu0).Seconds(), 2),
		CPUByProcess: map[string]float64{}}
	for k, v := range b.cpuParts() {
		p.CPUByProcess[k] = harness.Round((v - parts0[k]).Seconds(), 2)
	}
	p.RedisCommands = commandStats(ctx, b.st.Redis, 12)
	res.Pipeline = &p
	b.log.Printf("pipeline: %.2f s of server CPU for the stream with nobody online", p.CPUSeconds)
	return nil
}

// measurePush connects every device, measures idle memory, streams at
// the configured rates, then (with -rates) at each step of the ramp.
func (b *bench) measurePush(ctx context.Context, res *result) error {
	fl, err := b.openFleet(ctx)
	if err != nil {
		return err
	}
	defer fl.close()
	if err := b.measureIdle(ctx, fl, res); err != nil {
		return err
	}
	p, st, err := b.measureStream(ctx, fl, "push")
	if err != nil {
		return err
	}
	res.Push = p
	res.ServerRSSAfterBytes = b.rss()
	res.Repushes = st.repushes.Load()
	res.Duplicates = st.dups.Load()
	if m, err := scrape(b.servers[0].URL); err == nil {
		res.PushStage = m
	}
	b.log.Printf("push: %d of %d deliveries in %.1f s, p50 %.1f ms, p99 %.1f ms, %.4f ms CPU per delivery",
		p.Deliveries, p.Expected, p.Seconds, p.P50MS, p.P99MS, p.CPUMSPerDelivery)
	return b.measureRamp(ctx, fl, res)
}

// measureIdle connects the fleet in two halves: memory per idle
// connection is the slope between half and all of the devices connected
// and idle, so what pools and buffers the processes grow once is not a
// connection's.
func (b *bench) measureIdle(ctx context.Context, fl *fleet, res *result) error {
	half := len(fl.devs) / 2
	if err := b.connect(ctx, fl.devs[:half], fl.stats); err != nil {
		return err
	}
	time.Sleep(3 * time.Second)
	rssHalf := b.rss()
	if err := b.connect(ctx, fl.devs[half:], fl.stats); err != nil {
		return err
	}
	b.log.Printf("push: %d devices connected over %d API processes; idle 3 s", len(fl.devs), len(b.servers))
	time.Sleep(3 * time.Second)
	rssAfter := b.rss()
	if path := os.Getenv("OBL_HEAPPROFILE"); path != "" {
		if resp, err := http.Get(b.servers[1].URL + "/debug/heap"); err == nil {
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			_ = os.WriteFile(path, data, 0o644)
		}
	}
	res.IdleConnBytes = (rssAfter - rssHalf) / int64(len(fl.devs)-half)
	res.ServerRSSBytes = rssAfter
	return nil
}

// measureStream streams for a phase at the options' rates to the
// connected fleet and waits for the deliveries it means.
func (b *bench) measureStream(ctx context.Context, fl *fleet, tag string) (phase, *stats, error) {
	st := &stats{}
	fl.cur.Store(st)
	resetCommandStats(ctx, b.st.Redis)
	cpu0, t0, parts0 := b.cpu(), time.Now(), b.cpuParts()
	length := time.Duration(b.o.seconds * float64(time.Second))
	profiled := b.profilePhase(ctx, tag, length)
	expected, err := b.stream(ctx, length, tag)
	if err != nil {
		profiled()
		return phase{}, nil, err
	}
	end := drain(ctx, st, expected, 10*time.Second)
	cpu := b.cpu() - cpu0
	profiled()
	p := phaseOf(st, expected, end.Sub(t0), cpu)
	p.CPUByProcess = map[string]float64{}
	for k, v := range b.cpuParts() {
		p.CPUByProcess[k] = harness.Round((v - parts0[k]).Seconds(), 2)
	}
	p.RedisCommands = commandStats(ctx, b.st.Redis, 12)
	return p, st, nil
}

// connect opens the devices' live connections, 32 at a time.
func (b *bench) connect(ctx context.Context, devs []*liveDevice, getStats func() *stats) error {
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	var connErr atomic.Value
	for _, d := range devs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := d.connect(cctx); err != nil {
				connErr.Store(err)
				return
			}
			go d.run(getStats)
		}()
	}
	wg.Wait()
	if err, _ := connErr.Load().(error); err != nil {
		return fmt.Errorf("connect devices: %w", err)
	}
	return nil
}

// drain waits until the devices got what was sent (or nothing came for
// idle) and returns when the last delivery came.
func drain(ctx context.Context, st *stats, expected int64, idle time.Duration) time.Time {
	last, lastN := time.Now(), st.deliveries.Load()
	for ctx.Err() == nil {
		n := st.deliveries.Load()
		if n >= expected {
			return time.Now()
		}
		if n != lastN {
			last, lastN = time.Now(), n
		}
		if time.Since(last) > idle {
			return last
		}
		time.Sleep(20 * time.Millisecond)
	}
	return last
}

// measurePoll runs the same stream with every device polling sync.
func (b *bench) measurePoll(ctx context.Context, res *result) error {
	time.Sleep(2 * time.Second) // the live connections are gone
	st := &stats{}
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range b.users {
		cl, err := b.clientOf(i)
		if err != nil {
			stop()
			return err
		}
		cl.HTTP = pollHTTP
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(rand.Int64N(int64(b.o.pollEvery))))
			poll(pctx, cl, b.o.pollEvery, st)
		}()
	}
	b.log.Printf("poll: %d devices polling POST /v1/sync every %s", len(b.users), b.o.pollEvery)
	time.Sleep(2 * b.o.pollEvery) // every device caught up once
	st = resetStats(st)
	resetCommandStats(ctx, b.st.Redis)
	cpu0, t0, parts0 := b.cpu(), time.Now(), b.cpuParts()
	expected, err := b.stream(ctx, time.Duration(b.o.seconds*float64(time.Second)), "poll")
	if err != nil {
		stop()
		return err
	}
	end := drain(ctx, st, expected, 3*b.o.pollEvery)
	cpu := b.cpu() - cpu0
	stop()
	wg.Wait()
	res.Poll = phaseOf(st, expected, end.Sub(t0), cpu)
	res.Poll.RedisCommands = commandStats(ctx, b.st.Redis, 12)
	res.Poll.CPUByProcess = map[string]float64{}
	for k, v := range b.cpuParts() {
		res.Poll.CPUByProcess[k] = harness.Round((v - parts0[k]).Seconds(), 2)
	}
	b.log.Printf("poll: %d of %d deliveries, p50 %.1f ms, p99 %.1f ms, %.4f ms CPU per delivery",
		res.Poll.Deliveries, expected, res.Poll.P50MS, res.Poll.P99MS, res.Poll.CPUMSPerDelivery)
	return nil
}

var pollHTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4096, MaxConnsPerHost: 4096}}

// resetStats empties st in place (the pollers hold it).
func resetStats(st *stats) *stats {
	st.mu.Lock()
	st.latencies, st.afterStore = nil, nil
	st.mu.Unlock()
	st.deliveries.Store(0)
	st.repushes.Store(0)
	st.dups.Store(0)
	return st
}

func phaseOf(st *stats, expected int64, d time.Duration, cpu time.Duration) phase {
	st.mu.Lock()
	lat := append([]time.Duration(nil), st.latencies...)
	after := append([]time.Duration(nil), st.afterStore...)
	st.mu.Unlock()
	n := st.deliveries.Load()
	p := phase{Expected: expected, Deliveries: n, Seconds: harness.Round(d.Seconds(), 2),
		P50MS: harness.Round(harness.Percentile(lat, 50), 2), P99MS: harness.Round(harness.Percentile(lat, 99), 2),
		CPUSeconds:      harness.Round(cpu.Seconds(), 2),
		AfterStoreP50MS: harness.Round(harness.Percentile(after, 50), 2), AfterStoreP99MS: harness.Round(harness.Percentile(after, 99), 2)}
	if d > 0 {
		p.DeliveriesPerSec = harness.Round(float64(n)/d.Seconds(), 0)
	}
	if n > 0 {
		p.CPUMSPerDelivery = harness.Round(float64(cpu.Microseconds())/1000/float64(n), 4)
	}
	return p
}

// scrape reads the push stage's counters from the first server.
func scrape(base string) (map[string]float64, error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "offlinebox_push_") && !strings.HasPrefix(l, "offlinebox_live_pushes_total") &&
			!strings.HasPrefix(l, "offlinebox_live_slow") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err == nil {
			out[l[:i]] = v
		}
	}
	return out, sc.Err()
}
