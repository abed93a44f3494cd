package main

import (
	"fmt"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

type phase struct {
	Expected         int64   `json:"expected"`
	Deliveries       int64   `json:"deliveries"`
	Seconds          float64 `json:"seconds"`
	DeliveriesPerSec float64 `json:"deliveries_per_sec"`
	P50MS            float64 `json:"p50_ms"`
	P99MS            float64 `json:"p99_ms"`
	// AfterStoreP50MS and AfterStoreP99MS: from the message's write time
	// in the store to the device (ms resolution): what of the latency is
	// not fanout's.
	AfterStoreP50MS  float64 `json:"after_store_p50_ms"`
	AfterStoreP99MS  float64 `json:"after_store_p99_ms"`
	CPUSeconds       float64 `json:"cpu_seconds"`
	CPUMSPerDelivery float64 `json:"cpu_ms_per_delivery"`
	// CPUByProcess: seconds of CPU of each server process in the phase
	// (api0 runs the push stage too).
	CPUByProcess map[string]float64 `json:"cpu_by_process"`
	// RedisCommands: where redis-server's time went in the phase (fanout's
	// scripts included: they run in both designs).
	RedisCommands []redisCommand `json:"redis_commands,omitempty"`
}

type result struct {
	Benchmark      string          `json:"benchmark"`
	Scale          float64         `json:"scale"`
	Notes          []string        `json:"notes"`
	Machine        harness.Machine `json:"machine"`
	Devices        int             `json:"devices"`
	Groups         int             `json:"groups"`
	GroupSize      int             `json:"group_size"`
	LargeThreshold int             `json:"large_threshold"`
	BodyBytes      int             `json:"body_bytes"`
	Seconds        float64         `json:"seconds_per_phase"`
	Embedded       []string        `json:"embedded"`

	PushP50MS        float64 `json:"push_p50_ms"`
	PushP99MS        float64 `json:"push_p99_ms"`
	DeliveriesPerSec float64 `json:"deliveries_per_sec"`
	IdleConnBytes    int64   `json:"idle_conn_bytes"`
	ServerRSSBytes   int64   `json:"server_rss_bytes"`
	// ServerRSSAfterBytes: the same processes once the push phase's
	// stream, acks and receipts are over (after collections).
	ServerRSSAfterBytes  int64   `json:"server_rss_after_stream_bytes"`
	Repushes             int64   `json:"repushes"`
	Duplicates           int64   `json:"duplicates"`
	PollP50MS            float64 `json:"poll_p50_ms"`
	PollP99MS            float64 `json:"poll_p99_ms"`
	PushCPUMSPerDelivery float64 `json:"push_cpu_ms_per_delivery"`
	PollCPUMSPerDelivery float64 `json:"poll_cpu_ms_per_delivery"`
	// PushOverPipelineCPUMSPerDelivery is push's server CPU less what the
	// same stream costs with no device online (Pipeline), per delivery:
	// what the live channel itself costs.
	PushOverPipelineCPUMSPerDelivery float64 `json:"push_over_pipeline_cpu_ms_per_delivery"`
	PollOverPipelineCPUMSPerDelivery float64 `json:"poll_over_pipeline_cpu_ms_per_delivery"`
	// PushOwnCPUMSPerDelivery is push's server CPU less only what fanout's
	// scripts cost redis-server (the pipeline phase's redis-server CPU per
	// message meant), per delivery: the live channel's own cost, the push
	// stage's consumer included, as a store-less server such as
	// Centrifugo is measured. PollOwnCPUMSPerDelivery is the same for
	// polling.
	PushOwnCPUMSPerDelivery float64 `json:"push_own_cpu_ms_per_delivery"`
	PollOwnCPUMSPerDelivery float64 `json:"poll_own_cpu_ms_per_delivery"`
	Pipeline                *phase  `json:"pipeline,omitempty"`
	Push                    phase   `json:"push"`
	Poll                    phase   `json:"poll"`
	// PushStage holds the push stage's counters: presence lookups and
	// publishes per channel kind show that a large group costs one
	// publish per message and no per-member lookup.
	PushStage map[string]float64 `json:"push_stage"`
	// Ramp holds each step of -rates; MaxDeliveriesPerSecP99100MS is the
	// highest step's deliveries/s whose p99 was at most 100 ms with
	// nothing missing (0 without a ramp or when no step was).
	Ramp                        []rampStep    `json:"ramp,omitempty"`
	MaxDeliveriesPerSecP99100MS float64       `json:"max_deliveries_per_sec_p99_100ms"`
	Table                       []harness.Row `json:"table"`
}

func (r *result) finish() {
	r.PushP50MS, r.PushP99MS = r.Push.P50MS, r.Push.P99MS
	r.DeliveriesPerSec = r.Push.DeliveriesPerSec
	r.PushCPUMSPerDelivery = r.Push.CPUMSPerDelivery
	r.PollP50MS, r.PollP99MS = r.Poll.P50MS, r.Poll.P99MS
	r.PollCPUMSPerDelivery = r.Poll.CPUMSPerDelivery
	if r.Pipeline != nil && r.Pipeline.Expected > 0 {
		// The stream's rate falls when the machine is busy: the floor
		// scales with what each phase's stream held, not its length.
		// above is a phase's CPU per delivery over the part of the
		// pipeline phase's CPU (pipelineCPU of it) that its stream meant.
		above := func(p phase, pipelineCPU float64) float64 {
			if p.Deliveries == 0 {
				return 0
			}
			floor := pipelineCPU / float64(r.Pipeline.Expected) * float64(p.Expected)
			return harness.Round(max(p.CPUSeconds-floor, 0)*1000/float64(p.Deliveries), 4)
		}
		all, scripts := r.Pipeline.CPUSeconds, r.Pipeline.CPUByProcess["redis"]
		r.PushOverPipelineCPUMSPerDelivery, r.PollOverPipelineCPUMSPerDelivery = above(r.Push, all), above(r.Poll, all)
		r.PushOwnCPUMSPerDelivery, r.PollOwnCPUMSPerDelivery = above(r.Push, scripts), above(r.Poll, scripts)
	}
}

func printTable(r *result) []harness.Row {
	rows := []harness.Row{
		harness.Info("devices online (two API processes)", fmt.Sprint(r.Devices), ""),
		harness.Check("push p99, produce to device (ms)", fmt.Sprint(r.PushP99MS), fmt.Sprintf("poll %v", r.PollP99MS), "≤ 50", r.PushP99MS <= 50),
		harness.Info("push p50 (ms)", fmt.Sprint(r.PushP50MS), fmt.Sprintf("poll %v", r.PollP50MS)),
		harness.Info("deliveries per second", fmt.Sprint(r.DeliveriesPerSec), fmt.Sprintf("poll %v", r.Poll.DeliveriesPerSec)),
		harness.Check("memory per idle connection (bytes)", fmt.Sprint(r.IdleConnBytes), "", "≤ 16384", r.IdleConnBytes <= 16384),
		harness.Info("API processes' resident memory: idle / after the stream (MB)",
			fmt.Sprintf("%.1f / %.1f", float64(r.ServerRSSBytes)/(1<<20), float64(r.ServerRSSAfterBytes)/(1<<20)), "-"),
		harness.Check("server CPU per delivery (ms)", fmt.Sprint(r.PushCPUMSPerDelivery), fmt.Sprintf("poll %v", r.PollCPUMSPerDelivery),
			"≤ 0.06 and < polling", r.PushCPUMSPerDelivery <= 0.06 && (r.PollCPUMSPerDelivery == 0 || r.PushCPUMSPerDelivery < r.PollCPUMSPerDelivery)),
		harness.Info("server CPU per delivery over the stream with nobody online (ms)", fmt.Sprint(r.PushOverPipelineCPUMSPerDelivery),
			fmt.Sprintf("poll %v", r.PollOverPipelineCPUMSPerDelivery)),
		harness.Check("the live channel's own CPU per delivery: all but fanout's scripts (ms)", fmt.Sprint(r.PushOwnCPUMSPerDelivery),
			fmt.Sprintf("poll %v", r.PollOwnCPUMSPerDelivery), "≤ 0.03", r.PushOwnCPUMSPerDelivery <= 0.03),
		harness.Info("push p50 / p99 after the store's write time (ms)", fmt.Sprintf("%v / %v", r.Push.AfterStoreP50MS, r.Push.AfterStoreP99MS), ""),
		harness.Check("re-pushes / duplicates", fmt.Sprintf("%d / %d", r.Repushes, r.Duplicates), "", "0 / 0", r.Repushes == 0 && r.Duplicates == 0),
		harness.Info("delivered of expected", fmt.Sprintf("%d / %d", r.Push.Deliveries, r.Push.Expected),
			fmt.Sprintf("poll %d / %d", r.Poll.Deliveries, r.Poll.Expected)),
	}
	for _, s := range r.Ramp {
		rows = append(rows, harness.Info(fmt.Sprintf("ramp %g publications/s: deliveries/s, p50 / p99 (ms), CPU ms per delivery, missing", s.PublicationsPerSec),
			fmt.Sprintf("%.0f, %v / %v, %v, %d", s.DeliveriesPerSec, s.P50MS, s.P99MS, s.CPUMSPerDelivery, s.Missing), ""))
	}
	if len(r.Ramp) > 0 {
		rows = append(rows, harness.Check("highest deliveries/s at p99 ≤ 100 ms, nothing missing", fmt.Sprint(r.MaxDeliveriesPerSecP99100MS), "",
			"≥ 15000", r.MaxDeliveriesPerSecP99100MS >= 15000))
	}
	harness.PrintTable("live channel vs polling", rows)
	return rows
}

func notes() []string {
	return []string{
		"latency: from the produce call (a timestamp in the body) to the device's receipt of the frame (push) or of the sync answer (poll); every process on the same 2 shared cores as the devices, kfake and fanout",
		"server CPU: the two API processes (the first runs the push stage too) and redis-server, over the phase; the fanout process is the same in both designs and not counted, but its scripts run in redis-server and are (see pipeline); push includes the devices' acks (batched every second) and the receipts to senders",
		"memory per idle connection: resident memory of the API processes, the slope between half and all of the devices connected and idle, after collections",
		"conversation channels: a node listens once to each conversation its connections are in; a message is one publish on its conversation's channel (push_stage publishes channel=conv, channel=group for the large group), no presence lookup; presence is read only for members of a membership the push stage had not seen (push_stage presence_lookups) and for senders' receipts",
		"poll delivered may exceed expected: a sync answered before the previous poll's ack landed returns a message again",
		"pipeline: the same stream first runs with no device online; its server CPU (fanout's scripts in redis-server, the push stage's consumer) per message meant, times what each phase's stream meant, is what 'over the stream with nobody online' leaves out",
		"own: the phase's server CPU less fanout's scripts alone (the pipeline phase's redis-server CPU per message meant, times what the phase's stream meant), per delivery; the push stage's consumer and the API processes stay in: what the live channel itself costs, as a server without a store is measured (the push stage's own few Redis reads with nobody online go out with fanout's, a few percent of redis-server's time there); the headline server CPU per delivery keeps everything",
		"devices ack what they stored once per ack-every, each on a phase of its own (a hundredth of them every hundredth of the cycle); after_store: from the message's write time in the store (fanout's clock, ms) to the device",
		"ramp (-rates): each step streams its publications per second (80 % direct, 20 % to the groups, none to the large group) for seconds_per_phase to the same connected devices; cpu_ms_per_delivery_by_process is each process's CPU over the step per delivery; max_deliveries_per_sec_p99_100ms is the highest step's deliveries/s with p99 ≤ 100 ms and nothing missing",
		"redis_commands: INFO commandstats of the phase (reset at its start); commands run by scripts count under their own names as well as in evalsha",
	}
}
