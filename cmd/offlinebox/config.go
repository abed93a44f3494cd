package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// stackConfig names the stores and broker a process talks to. Each field
// comes from a flag or, when the flag is not given, from its environment
// variable.
type stackConfig struct {
	Kafka          string
	Redis          string
	RedisCluster   bool
	HotRedis       string
	ClickHouse     string
	ClickHouseDB   string
	ClickHouseUser string
	ClickHousePass string
	Prefix         string
	Listen         string
	MetricsListen  string
	JWTSecret      string
	Partitions     int
	// SessionTimeout: how long the group waits for a silent member (a
	// killed process) before its partitions move to another.
	SessionTimeout time.Duration
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// bind registers the stack flags on fs with environment defaults.
func (c *stackConfig) bind(fs *flag.FlagSet) {
	fs.StringVar(&c.Kafka, "kafka", env("OFFLINEBOX_KAFKA", "127.0.0.1:9092"), "Kafka seed brokers, comma separated (env OFFLINEBOX_KAFKA)")
	fs.StringVar(&c.Redis, "redis", env("OFFLINEBOX_REDIS", "127.0.0.1:6379"), "Redis address; several comma separated with -redis-cluster (env OFFLINEBOX_REDIS)")
	fs.BoolVar(&c.RedisCluster, "redis-cluster", env("OFFLINEBOX_REDIS_CLUSTER", "") == "1", "Redis is a cluster (env OFFLINEBOX_REDIS_CLUSTER=1)")
	fs.StringVar(&c.HotRedis, "hot-redis", env("OFFLINEBOX_HOT_REDIS", ""), "separate Redis for hot accounts' inboxes (env OFFLINEBOX_HOT_REDIS)")
	fs.StringVar(&c.ClickHouse, "clickhouse", env("OFFLINEBOX_CLICKHOUSE", "127.0.0.1:9000"), "ClickHouse native address (env OFFLINEBOX_CLICKHOUSE)")
	fs.StringVar(&c.ClickHouseDB, "clickhouse-db", env("OFFLINEBOX_CLICKHOUSE_DB", "offlinebox"), "ClickHouse database (env OFFLINEBOX_CLICKHOUSE_DB)")
	fs.StringVar(&c.ClickHouseUser, "clickhouse-user", env("OFFLINEBOX_CLICKHOUSE_USER", "default"), "ClickHouse user (env OFFLINEBOX_CLICKHOUSE_USER)")
	fs.StringVar(&c.ClickHousePass, "clickhouse-password", env("OFFLINEBOX_CLICKHOUSE_PASSWORD", ""), "ClickHouse password (env OFFLINEBOX_CLICKHOUSE_PASSWORD)")
	fs.StringVar(&c.Prefix, "prefix", env("OFFLINEBOX_PREFIX", "ob:"), "Redis key prefix (env OFFLINEBOX_PREFIX)")
	fs.StringVar(&c.Listen, "listen", env("OFFLINEBOX_LISTEN", "127.0.0.1:8080"), "HTTP API address (env OFFLINEBOX_LISTEN)")
	fs.StringVar(&c.MetricsListen, "metrics-listen", env("OFFLINEBOX_METRICS_LISTEN", "127.0.0.1:9464"), "Prometheus /metrics address of the process (the API's port does not serve it); empty to disable (env OFFLINEBOX_METRICS_LISTEN)")
	fs.StringVar(&c.JWTSecret, "jwt-secret", env("OFFLINEBOX_JWT_SECRET", ""), "HS256 secret for bearer tokens (env OFFLINEBOX_JWT_SECRET); required")
	fs.IntVar(&c.Partitions, "partitions", 8, "partitions of each topic when offlinebox creates them")
	fs.DurationVar(&c.SessionTimeout, "session-timeout", 0, "consumer group session timeout: how soon a dead worker's partitions move (0: the client's default, 45s)")
}

func (c *stackConfig) kafkaBrokers() []string { return splitList(c.Kafka) }
func (c *stackConfig) redisAddrs() []string   { return splitList(c.Redis) }

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// validate names the first setting that cannot work.
func (c *stackConfig) validate(needSecret bool) error {
	switch {
	case len(c.kafkaBrokers()) == 0:
		return fmt.Errorf("-kafka: no broker given")
	case len(c.redisAddrs()) == 0:
		return fmt.Errorf("-redis: no address given")
	case len(c.redisAddrs()) > 1 && !c.RedisCluster:
		return fmt.Errorf("-redis: several addresses need -redis-cluster")
	case c.Partitions < 1:
		return fmt.Errorf("-partitions: %d is below 1", c.Partitions)
	case c.SessionTimeout < 0:
		return fmt.Errorf("-session-timeout: %s is negative", c.SessionTimeout)
	case needSecret && len(c.JWTSecret) < 16:
		return fmt.Errorf("-jwt-secret: required, at least 16 bytes (env OFFLINEBOX_JWT_SECRET)")
	}
	return nil
}

// callTimeout bounds every outbound call a subcommand makes on its own.
const callTimeout = 10 * time.Second
