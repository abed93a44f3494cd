package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/embedded"
	"github.com/offlinebox/offlinebox/schemas"
)

// Needs says which stores a benchmark uses.
type Needs struct {
	Kafka      bool
	ClickHouse bool
	// Partitions of each topic the stack creates.
	Partitions int32
}

// Stack is the stores a benchmark talks to, started here or given by flag.
type Stack struct {
	RedisAddr      string
	Brokers        []string
	ClickHouseAddr string
	// Redis is a client for the benchmark's own reads (memory census,
	// baselines); stages get clients of their own.
	Redis *redis.Client
	// Embedded names the servers this process started.
	Embedded []string

	stops []func()
}

// StartStack brings up what needs asks for: every store whose address the
// flags leave empty is started in f.Dir (or a temporary folder), on
// 127.0.0.1. Stop undoes everything, also after a failed start.
func StartStack(ctx context.Context, f *Flags, needs Needs, log *Log) (*Stack, error) {
	st := &Stack{}
	if err := st.start(ctx, f, needs, log); err != nil {
		st.Stop()
		return nil, err
	}
	return st, nil
}

func (st *Stack) start(ctx context.Context, f *Flags, needs Needs, log *Log) error {
	dir, err := st.dataDir(f)
	if err != nil {
		return err
	}
	// Servers live as long as the stack, not as long as ctx.
	life, cancel := context.WithCancel(context.Background())
	st.stops = append(st.stops, cancel)
	if st.RedisAddr, err = st.redis(ctx, life, f, dir, log); err != nil {
		return err
	}
	st.Redis = redis.NewClient(&redis.Options{Addr: st.RedisAddr, ReadTimeout: time.Minute, PoolSize: 8})
	st.stops = append(st.stops, func() { _ = st.Redis.Close() })
	if needs.Kafka {
		if err := st.kafka(f, dir, needs.Partitions, log); err != nil {
			return err
		}
	}
	if needs.ClickHouse {
		if err := st.clickhouse(ctx, life, f, dir, log); err != nil {
			return err
		}
	}
	return nil
}

func (st *Stack) dataDir(f *Flags) (string, error) {
	if f.Redis != "" && f.Kafka != "" && f.ClickHouse != "" {
		return "", nil
	}
	if f.Dir != "" {
		return filepath.Abs(f.Dir)
	}
	dir, err := os.MkdirTemp("", "offlinebox-bench-")
	if err != nil {
		return "", fmt.Errorf("data folder: %w", err)
	}
	if !f.Keep {
		st.stops = append(st.stops, func() { _ = os.RemoveAll(dir) })
	}
	return dir, nil
}

func (st *Stack) redis(ctx, life context.Context, f *Flags, dir string, log *Log) (string, error) {
	if f.Redis != "" {
		return f.Redis, CheckLoopback("redis", f.Redis)
	}
	p, err := embedded.StartRedis(life, embedded.RedisOptions{Dir: filepath.Join(dir, "redis"), AppendOnly: f.AOF,
		Args: []string{"--maxmemory-policy", "noeviction"}})
	if err != nil {
		return "", fmt.Errorf("start redis-server: %w", err)
	}
	st.stops = append(st.stops, func() { _ = p.Stop(context.Background()) })
	st.Embedded = append(st.Embedded, "redis-server "+p.Addr())
	log.Printf("embedded redis-server on %s (aof %v)", p.Addr(), f.AOF)
	return p.Addr(), ctx.Err()
}

func (st *Stack) kafka(f *Flags, dir string, partitions int32, log *Log) error {
	if partitions < 1 {
		partitions = 8
	}
	topics := []string{schemas.TopicMessages, schemas.TopicSequenced, schemas.TopicReceipts, schemas.TopicDeadLetter}
	if f.Kafka != "" {
		st.Brokers = []string{f.Kafka}
		return CheckLoopback("kafka", f.Kafka)
	}
	c, err := embedded.StartKafka(filepath.Join(dir, "kafka"), partitions, topics...)
	if err != nil {
		return fmt.Errorf("start kfake: %w", err)
	}
	st.stops = append(st.stops, c.Close)
	st.Brokers = c.ListenAddrs()
	st.Embedded = append(st.Embedded, "kfake "+st.Brokers[0])
	log.Printf("embedded kfake on %v (%d partitions per topic)", st.Brokers, partitions)
	return nil
}

func (st *Stack) clickhouse(ctx, life context.Context, f *Flags, dir string, log *Log) error {
	if f.ClickHouse != "" {
		st.ClickHouseAddr = f.ClickHouse
		return CheckLoopback("clickhouse", f.ClickHouse)
	}
	log.Printf("starting clickhouse-server (takes a few seconds)")
	p, err := embedded.StartClickHouse(life, embedded.ClickHouseOptions{Dir: filepath.Join(dir, "clickhouse")})
	if err != nil {
		return fmt.Errorf("start clickhouse-server: %w", err)
	}
	st.stops = append(st.stops, func() { _ = p.Stop(context.Background()) })
	st.ClickHouseAddr = p.Addr()
	st.Embedded = append(st.Embedded, "clickhouse-server "+p.Addr())
	log.Printf("embedded clickhouse-server on %s", p.Addr())
	return ctx.Err()
}

// Stop stops what StartStack started, newest first. It is idempotent.
func (st *Stack) Stop() {
	for i := len(st.stops) - 1; i >= 0; i-- {
		st.stops[i]()
	}
	st.stops = nil
}

// CheckLoopback refuses an address that is not on this machine's loopback:
// benchmark traffic goes to 127.0.0.0/8 or ::1 only.
func CheckLoopback(what, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-%s %q: %w", what, addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return errors.New("-" + what + " " + addr + ": benchmarks send traffic to loopback addresses only")
	}
	return nil
}
