package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/bench/checker"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/schemas"
)

// capacity is what the run measured for the capacity model, over the
// first round (no Redis fault in it).
type capacity struct {
	Messages   int64 `json:"messages"`
	Deliveries int   `json:"deliveries"`
	Requests   int   `json:"requests"`
	// Masters: each Redis master's command CPU (INFO commandstats) and
	// calls over the round.
	Masters           []masterLoad `json:"masters"`
	RedisUSPerMessage float64      `json:"redis_us_per_message"`
	// RedisUSPerMessageMaxMaster is the busiest master's share, per
	// message of the whole cluster.
	RedisUSPerMessageMaxMaster float64 `json:"redis_us_per_message_busiest_master"`
	RedisBytesPerMessage       float64 `json:"redis_bytes_per_message"`
	KafkaBytesPerMessage       float64 `json:"kafka_bytes_per_message"`
	ClickHouseBytesPerMessage  float64 `json:"clickhouse_bytes_per_message"`
	// API: CPU per request (syncs, pages, sends) or push, per idle live
	// connection per second, and resident memory per live connection.
	APICPUUSPerRequestOrPush float64 `json:"api_cpu_us_per_request_or_push"`
	APICPUUSPerIdleConnSec   float64 `json:"api_cpu_us_per_idle_connection_s"`
	APIBytesPerConnection    float64 `json:"api_bytes_per_connection"`
	IdleConnections          int     `json:"idle_connections"`
	DeliveriesPerMessage     float64 `json:"deliveries_per_message"`
}

type masterLoad struct {
	Addr  string  `json:"addr"`
	USec  int64   `json:"usec"`
	Calls int64   `json:"calls"`
	Share float64 `json:"share"`
}

// redisSnapshot is every node's command CPU, calls and used memory.
type redisSnapshot map[string]struct {
	master            bool
	usec, calls, used int64
}

func (s *stack) redisSnapshot(ctx context.Context) (redisSnapshot, error) {
	snap := redisSnapshot{}
	for _, n := range s.redis {
		if n.Pid() == 0 {
			continue
		}
		rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second})
		info, err := rdb.Info(ctx, "commandstats", "memory", "replication").Result()
		_ = rdb.Close()
		if err != nil {
			return nil, fmt.Errorf("redis %s INFO: %w", n.Addr(), err)
		}
		e := snap[n.Addr()]
		for _, line := range strings.Split(info, "\r\n") {
			switch {
			case strings.HasPrefix(line, "cmdstat_"):
				_, st, _ := harness.ParseCommandStat(line)
				e.usec += st.Usec
				e.calls += st.Calls
			case strings.HasPrefix(line, "used_memory_dataset:"):
				// The data alone: client buffers and the like come and go
				// with connections.
				e.used, _ = strconv.ParseInt(strings.TrimPrefix(line, "used_memory_dataset:"), 10, 64)
			case line == "role:master":
				e.master = true
			}
		}
		snap[n.Addr()] = e
	}
	return snap, nil
}

// fill puts the Redis side of the round into c: before and after are
// snapshots around it, messages what it sequenced.
func (c *capacity) fillRedis(before, after, memBefore redisSnapshot) {
	var total, used int64
	for addr, a := range after {
		b, ok := before[addr]
		if !a.master || !ok {
			continue
		}
		m := masterLoad{Addr: addr, USec: a.usec - b.usec, Calls: a.calls - b.calls}
		total += m.USec
		if mb, ok := memBefore[addr]; ok {
			used += a.used - mb.used
		}
		c.Masters = append(c.Masters, m)
	}
	var busiest int64
	for i := range c.Masters {
		if total > 0 {
			c.Masters[i].Share = float64(c.Masters[i].USec) / float64(total)
		}
		busiest = max(busiest, c.Masters[i].USec)
	}
	if c.Messages > 0 {
		c.RedisUSPerMessage = float64(total) / float64(c.Messages)
		c.RedisUSPerMessageMaxMaster = float64(busiest) / float64(c.Messages)
		c.RedisBytesPerMessage = float64(max(used, 0)) / float64(c.Messages)
	}
}

// apiCPU is the API nodes' user+system CPU in clock ticks (1/100 s) and
// their resident memory in bytes.
func (s *stack) apiCPU() (ticks, rss int64) {
	for _, p := range s.apis {
		if pid := p.Pid(); pid != 0 {
			cpu, _ := harness.ProcessCPU(pid) // 0 when it cannot be read
			ticks += int64(cpu / (10 * time.Millisecond))
			rss += harness.ProcessRSS(pid)
		}
	}
	return ticks, rss
}

// measureIdle opens n idle live connections through the balancer and
// measures the API nodes' memory for them and their CPU over 5 s; the
// connections are closed after.
func (s *stack) measureIdle(ctx context.Context, k *auth.Keyring, n int, c *capacity) error {
	_, rss0 := s.apiCPU()
	var lives []*client.Live
	defer func() {
		for _, l := range lives {
			_ = l.CloseNow()
		}
	}()
	for i := range n {
		tok, err := k.Mint(fmt.Sprintf("idle-%05d", i), "d1", time.Hour)
		if err != nil {
			return err
		}
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		l, err := client.New(s.lbURL, tok, nil).DialLive(dctx, client.LiveOptions{Buffer: 4})
		cancel()
		if err != nil {
			return fmt.Errorf("idle connection %d: %w", i, err)
		}
		lives = append(lives, l)
	}
	time.Sleep(2 * time.Second)
	t1, rss1 := s.apiCPU()
	time.Sleep(5 * time.Second)
	t2, _ := s.apiCPU()
	c.IdleConnections = n
	c.APIBytesPerConnection = float64(rss1-rss0) / float64(n)
	c.APICPUUSPerIdleConnSec = float64(t2-t1) * 1e4 / 5 / float64(n)
	return nil
}

// storedBytes: the average record size of im.messages and im.sequenced
// (what one message costs Kafka, before replication) and ClickHouse's
// bytes on disk per history row.
func (s *stack) storedBytes(ctx context.Context, c *capacity) error {
	var per float64
	for _, t := range []string{schemas.TopicMessages, schemas.TopicSequenced} {
		recs, err := checker.ReadTopic(ctx, s.brokers, t)
		if err != nil {
			return err
		}
		var b int
		for _, r := range recs {
			b += len(r.Key) + len(r.Value)
			for _, h := range r.Headers {
				b += len(h.Key) + len(h.Value)
			}
		}
		if len(recs) > 0 {
			per += float64(b) / float64(len(recs))
		}
	}
	c.KafkaBytesPerMessage = per
	var bytes, rows uint64
	for _, shard := range s.chShards {
		b, r, err := shardParts(ctx, shard.Addr(), s.chDB+"_local")
		if err != nil {
			return err
		}
		bytes, rows = bytes+b, rows+r
	}
	if rows > 0 {
		c.ClickHouseBytesPerMessage = float64(bytes) / float64(rows)
	}
	return nil
}

// idleConnections are opened to measure what an idle live connection
// costs an API node.
const idleConnections = 300

// measure is the state before the measured round.
type measure struct {
	redis redisSnapshot
	// memBefore is taken before the idle connections come and go (their
	// presence keys would count against the round).
	memBefore redisSnapshot
	apiTicks  int64
	seqEnd    int64
}

func (s *stack) sequencedEnd(ctx context.Context) int64 {
	ends, err := checker.EndOffsets(ctx, s.brokers, schemas.TopicSequenced)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ends {
		n += e
	}
	return n
}

func (s *stack) startMeasure(ctx context.Context) measure {
	m := measure{seqEnd: s.sequencedEnd(ctx)}
	m.redis, _ = s.redisSnapshot(ctx)
	m.apiTicks, _ = s.apiCPU()
	return m
}

func (s *stack) endMeasure(ctx context.Context, m measure, fr faultResult, c *capacity) {
	ticks, _ := s.apiCPU()
	after, err := s.redisSnapshot(ctx)
	if err != nil || m.redis == nil {
		return
	}
	c.Messages = s.sequencedEnd(ctx) - m.seqEnd
	c.Deliveries, c.Requests = fr.Delivered, fr.requests
	c.fillRedis(m.redis, after, m.memBefore)
	if c.Messages > 0 {
		c.DeliveriesPerMessage = float64(fr.Delivered) / float64(c.Messages)
	}
	if n := fr.requests + fr.Pushed; n > 0 && ticks > m.apiTicks {
		c.APICPUUSPerRequestOrPush = float64(ticks-m.apiTicks) * 1e4 / float64(n)
	}
}

// shardParts sums the bytes on disk and rows of one shard's own tables.
func shardParts(ctx context.Context, addr, db string) (bytes, rows uint64, err error) {
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}, DialTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second})
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	if err := conn.QueryRow(ctx, "SELECT sum(bytes_on_disk), sum(rows) FROM system.parts WHERE active AND database = ?", db).Scan(&bytes, &rows); err != nil {
		return 0, 0, fmt.Errorf("clickhouse parts of %s: %w", addr, err)
	}
	return bytes, rows, nil
}
