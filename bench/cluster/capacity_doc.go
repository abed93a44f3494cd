package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"time"
)

// profile is the traffic the sizing assumes.
type profile struct {
	MessagesPerUserDay float64
	PeakOnline         float64 // share of users connected at the peak
	PeakFactor         float64 // peak message rate over the day's average
	SyncsPerOnlineHour float64
	HotDays            float64 // days a message stays in Redis
	KafkaDays          float64 // days Kafka keeps a record
	KafkaReplication   float64
}

var defaultProfile = profile{MessagesPerUserDay: 40, PeakOnline: 0.10, PeakFactor: 3, SyncsPerOnlineHour: 6,
	HotDays: 7, KafkaDays: 7, KafkaReplication: 3}

// Machine budgets the sizing divides by.
const (
	redisCoreBudgetUS = 0.5e6    // µs of command CPU per second one master may spend (half a core)
	redisMemBudget    = 25 << 30 // bytes of data per master
	apiCores          = 8        // cores of an API machine
	apiCoreBudget     = 0.6      // share of them used at the peak
	apiMemBudget      = 24 << 30 // bytes of connection memory per API machine
	brokerBytesPerSec = 50 << 20 // bytes/s one broker takes in (replicated writes included)
	brokerDisk        = 4 << 40  // bytes of log per broker
	chShardDisk       = 8 << 40  // bytes of history per ClickHouse shard
	chYearDays        = 365.0    // history kept
)

type sizing struct {
	users                                      float64
	msgsPerSec, deliveriesPerSec, conns        float64
	redis, api, brokers, shards                int
	redisByCPU, redisByMem, apiByCPU, apiByMem int
}

func size(c *capacity, p profile, users float64) sizing {
	z := sizing{users: users}
	z.msgsPerSec = users * p.MessagesPerUserDay / 86400 * p.PeakFactor
	z.deliveriesPerSec = z.msgsPerSec * c.DeliveriesPerMessage
	z.conns = users * p.PeakOnline
	z.redisByCPU = ceil(z.msgsPerSec * c.RedisUSPerMessage / redisCoreBudgetUS)
	z.redisByMem = ceil(users * p.MessagesPerUserDay * p.HotDays * c.RedisBytesPerMessage / redisMemBudget)
	z.redis = max(z.redisByCPU, z.redisByMem, 1)
	syncsPerSec := z.conns * p.SyncsPerOnlineHour / 3600
	apiUS := z.conns*c.APICPUUSPerIdleConnSec + (z.deliveriesPerSec+syncsPerSec)*c.APICPUUSPerRequestOrPush
	z.apiByCPU = ceil(apiUS / (apiCores * apiCoreBudget * 1e6))
	z.apiByMem = ceil(z.conns * c.APIBytesPerConnection / apiMemBudget)
	z.api = max(z.apiByCPU, z.apiByMem, 2)
	kafkaIn := z.msgsPerSec * c.KafkaBytesPerMessage * p.KafkaReplication
	kafkaDisk := users * p.MessagesPerUserDay * p.KafkaDays * c.KafkaBytesPerMessage * p.KafkaReplication
	z.brokers = max(ceil(kafkaIn/brokerBytesPerSec), ceil(kafkaDisk/brokerDisk), 3)
	z.shards = max(ceil(users*p.MessagesPerUserDay*chYearDays*c.ClickHouseBytesPerMessage/chShardDisk), 1)
	return z
}

func ceil(x float64) int {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return int(math.Ceil(x))
}

// writeCapacity writes the capacity model from the run's measurements
// (and a 1-master run's, with -compare).
func writeCapacity(o options, res result) error {
	c := res.Capacity
	if c == nil || c.Messages == 0 {
		return fmt.Errorf("capacity: the baseline round measured nothing")
	}
	var one *result
	if o.compare != "" {
		r, err := readResult(o.compare)
		if err != nil {
			return fmt.Errorf("-compare: %w", err)
		}
		one = &r
	}
	var b strings.Builder
	p := defaultProfile
	w := func(f string, a ...any) { fmt.Fprintf(&b, f+"\n", a...) }
	w("# Capacity model")
	w("")
	w("Written by `go run ./bench/cluster -capacity docs/capacity.md` (`make capacity`; `-render` writes it again from a saved `-json` result) on %s from what that run measured; do not edit by hand.", time.Now().UTC().Format("2006-01-02"))
	w("The run: a Redis Cluster of %d masters with a replica each, %d brokers (kfake, one process), %d ClickHouse shards (a server each; the processes read and write Distributed tables over them), %d API nodes behind haproxy, every worker twice over, on one machine of %d cores shared with the load generator.",
		res.RedisMasters, res.Brokers, res.ClickHouseShards, res.APINodes, cores())
	w("The measured round is the baseline round (the checker's workload, no fault): %d messages sequenced, %d deliveries to devices (%.1f per message), %d device requests.", c.Messages, c.Deliveries, c.DeliveriesPerMessage, c.Requests)
	w("")
	w("## Per message and per connection")
	w("")
	w("| quantity | measured | how |")
	w("|---|---|---|")
	w("| Redis command CPU per message, all masters | %.1f µs | INFO commandstats usec, sum over masters / messages: every command of the round, the fanout's scripts, the devices' syncs, pages and acks, the live bus, presence and the conversation index |", c.RedisUSPerMessage)
	w("| Redis command CPU per message, busiest master | %.1f µs | the same, the busiest master alone |", c.RedisUSPerMessageMaxMaster)
	w("| Redis memory per message | %.0f B | used_memory_dataset growth over masters / messages (timeline, inboxes, indexes) |", c.RedisBytesPerMessage)
	w("| Kafka bytes per message | %.0f B | average record of im.messages + im.sequenced (key, value, headers), one copy |", c.KafkaBytesPerMessage)
	w("| ClickHouse bytes per message | %.0f B | system.parts bytes_on_disk / rows, compressed |", c.ClickHouseBytesPerMessage)
	w("| API CPU per request or push | %.0f µs | API processes' CPU (/proc) / (syncs + pages + sends + pushes); syncs and pushes are not told apart |", c.APICPUUSPerRequestOrPush)
	w("| API CPU per idle live connection | %.2f µs/s | %d idle WebSockets through haproxy, CPU over 5 s |", c.APICPUUSPerIdleConnSec, c.IdleConnections)
	w("| API memory per live connection | %.0f B | RSS growth of the API nodes for those connections |", c.APIBytesPerConnection)
	w("")
	w("How the baseline round's Redis load split across the masters:")
	w("")
	w("| master | command CPU | calls | share |")
	w("|---|---|---|---|")
	for _, m := range c.Masters {
		w("| %s | %d µs | %d | %.0f%% |", m.Addr, m.USec, m.Calls, m.Share*100)
	}
	writeSizing(w, c, p)
	writeComparison(w, res, one)
	writeLimits(w)
	return os.WriteFile(o.capacity, []byte(b.String()), 0o644)
}

// readResult reads the last line of a -json run's output.
func readResult(path string) (result, error) {
	var r result
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// renderSaved writes the capacity model of a saved run.
func renderSaved(o options) error {
	if o.capacity == "" {
		return fmt.Errorf("-render needs -capacity FILE")
	}
	r, err := readResult(o.render)
	if err != nil {
		return err
	}
	return writeCapacity(o, r)
}

func writeSizing(w func(string, ...any), c *capacity, p profile) {
	w("")
	w("## Sizing")
	w("")
	w("Traffic profile: %.0f messages per user per day, the peak hour at %.0f× the day's average rate, %.0f%% of users connected at the peak, %.0f syncs per connected user per hour, the group mix of the workload (%.1f deliveries per message); Redis keeps %.0f days hot, Kafka %.0f days at replication %.0f, ClickHouse a year.",
		p.MessagesPerUserDay, p.PeakFactor, p.PeakOnline*100, p.SyncsPerOnlineHour, c.DeliveriesPerMessage, p.HotDays, p.KafkaDays, p.KafkaReplication)
	w("")
	w("Formulae (U users; m = messages/user/day; peak msgs/s M = U·m/86400·peak; D = M·deliveries per message; C = U·online share):")
	w("")
	w("- Redis masters = max(⌈M · µs per message / %.0f µs⌉, ⌈U·m·hot days · bytes per message / %d GiB⌉); one replica each.", redisCoreBudgetUS, redisMemBudget>>30)
	w("- API nodes (%d cores at %.0f%%, %d GiB for connections) = max(⌈(C · idle µs/s + (D + C·syncs/h/3600) · µs per request) / (%d·%.1f·10⁶)⌉, ⌈C · bytes per connection / %d GiB⌉, 2).",
		apiCores, apiCoreBudget*100, apiMemBudget>>30, apiCores, apiCoreBudget, apiMemBudget>>30)
	w("- Brokers = max(⌈M · Kafka bytes · replication / %d MiB/s⌉, ⌈U·m·Kafka days · Kafka bytes · replication / %d TiB⌉, 3).", brokerBytesPerSec>>20, brokerDisk>>40)
	w("- ClickHouse shards = ⌈U·m·365 · ClickHouse bytes / %d TiB⌉ (each shard with its replica).", chShardDisk>>40)
	w("- Workers: fanout, push and convindex scale with partitions; give every topic at least as many partitions as the most processes of one kind.")
	w("")
	w("| users | peak msgs/s | peak deliveries/s | peak connections | Redis masters (CPU / memory) | API nodes (CPU / memory) | brokers | ClickHouse shards |")
	w("|---|---|---|---|---|---|---|---|")
	for _, u := range []float64{1e6, 1e7, 1e8} {
		z := size(c, p, u)
		w("| %s | %.0f | %.0f | %.0f | %d (%d / %d) | %d (%d / %d) | %d | %d |", humanUsers(u), z.msgsPerSec, z.deliveriesPerSec, z.conns,
			z.redis, z.redisByCPU, z.redisByMem, z.api, z.apiByCPU, z.apiByMem, z.brokers, z.shards)
	}
}

func humanUsers(u float64) string {
	return fmt.Sprintf("%.0fM", u/1e6)
}

func cores() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "processor\t:")
}

func writeComparison(w func(string, ...any), three result, one *result) {
	w("")
	w("## 1 master against %d", three.RedisMasters)
	w("")
	if one == nil || one.Capacity == nil {
		w("No 1-master run was given (-compare); `make capacity` runs one first.")
		return
	}
	w("The same workload (the baseline round, same seed and size) on a cluster of one master (run with -baseline-only) and on one of %d:", three.RedisMasters)
	w("")
	w("| | 1 master | %d masters |", three.RedisMasters)
	w("|---|---|---|")
	w("| deliveries/s (the stream's pace is fixed: a check that nothing slowed, not a peak) | %.0f | %.0f |", one.DeliveriesPerSec, three.DeliveriesPerSec)
	w("| Redis µs per message, all masters | %.1f | %.1f |", one.Capacity.RedisUSPerMessage, three.Capacity.RedisUSPerMessage)
	w("| Redis µs per message, busiest master | %.1f | %.1f |", one.Capacity.RedisUSPerMessageMaxMaster, three.Capacity.RedisUSPerMessageMaxMaster)
	w("| push p50 / p99 (probe through the balancer; the %d-master run's faults included) | %.0f / %.0f ms | %.0f / %.0f ms |", three.RedisMasters, one.PushP50MS, one.PushP99MS, three.PushP50MS, three.PushP99MS)
	w("| first sync p99 | %.1f ms | %.1f ms |", one.FirstSyncP99MS, three.FirstSyncP99MS)
	w("")
	o, t := one.Capacity, three.Capacity
	if o.RedisUSPerMessage > 0 {
		w("On %d masters the busiest carries %.0f%% of what the single master spent per message, and the masters together %.2f× it: the busiest master's figure is what bounds a cluster (a conversation's keys share one slot), the sum is what the cluster pays for being one (commands split by slot, each master's share of the live bus and presence).",
			three.RedisMasters, 100*t.RedisUSPerMessageMaxMaster/o.RedisUSPerMessage, t.RedisUSPerMessage/o.RedisUSPerMessage)
	}
}

func writeLimits(w func(string, ...any)) {
	w("")
	w("## Where the model stops holding")
	w("")
	w("- One hot conversation: its records share a partition (one fanout process) and its timeline one hash slot (one master). Its rate is bounded by one fanout process and one master's CPU, whatever the cluster's size.")
	w("- A giant group: above the large-group threshold a message writes no per-member inboxes, so Redis cost stays per message, but its deliveries are pushes to every connected member: API and push CPU grow with members online, not with messages, and land on the master holding the group's slot when members page.")
	w("- The per-message Redis figures come from a short round: its bytes include the round's set-up (the founding of its groups, a 3,000-member one among them, and its users' devices and presence) spread over few messages, and its CPU every read the devices made, so both overstate a long steady state; the sizing's memory column is the upper bound they give.")
	w("- The per-request API CPU mixes syncs, pages, sends and pushes in the workload's proportions; another mix (say, mostly idle connections with rare pushes) moves it.")
	w("- Everything ran on one machine, so the figures include contention between the processes and the load generator; Kafka was kfake (in memory, no replication on disk), ClickHouse's shards shared one disk: broker and shard figures are sizes of data, not measured throughput.")
	w("- The budgets (half a core per Redis master, 8-core API machines at 60%%, 50 MiB/s per broker) are stated assumptions, not measurements.")
}
