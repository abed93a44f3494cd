package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/workers/census"
)

// stackConfig names the stores and broker a process talks to. Each field
// comes from its flag or, when the flag is not given, from its environment
// variable, then from a running demo's env file (envfile.go), then from the
// built-in default.
type stackConfig struct {
	Kafka             string
	Redis             string
	RedisCluster      bool
	HotRedis          string
	ClickHouse        string
	ClickHouseDB      string
	ClickHouseUser    string
	ClickHousePass    string
	ClickHouseCluster string
	Prefix            string
	Listen            string
	MetricsListen     string
	JWTSecret         string
	// Node names an API process on the live bus (random when empty).
	Node string
	// KeyFile holds the master keys bodies are sealed with (seal).
	KeyFile    string
	Partitions int
	// DriftThreshold is the census's N: a user whose devices' cursors
	// differ by more seqs than this has drifted.
	DriftThreshold uint64
	// SessionTimeout: how long the group waits for a silent member (a
	// killed process) before its partitions move to another.
	SessionTimeout time.Duration
	// StoreWait bounds how long a store that does not answer is waited
	// for at start; 0 waits until ctx ends (workers: a store that is down
	// is waited for). One-shot tools give up after it.
	StoreWait time.Duration
	// RetentionPolicy is the retention policy file (retention/); empty:
	// the built-in retention.
	RetentionPolicy string
	// LiveBusFormat is the form the push stage and the API nodes publish
	// on the live bus (live.Format): json until every API node reads binary.
	LiveBusFormat string

	// origin says, per flag name, where a value that did not come from the
	// command line came from, for error messages.
	origin map[string]string
}

// stackSetting ties one flag to its environment variable.
type stackSetting struct{ flag, env string }

// stackSettings are the flags that may come from the environment or from a
// demo's env file.
var stackSettings = []stackSetting{
	{"kafka", "OFFLINEBOX_KAFKA"},
	{"redis", "OFFLINEBOX_REDIS"},
	{"redis-cluster", "OFFLINEBOX_REDIS_CLUSTER"},
	{"hot-redis", "OFFLINEBOX_HOT_REDIS"},
	{"clickhouse", "OFFLINEBOX_CLICKHOUSE"},
	{"clickhouse-db", "OFFLINEBOX_CLICKHOUSE_DB"},
	{"clickhouse-user", "OFFLINEBOX_CLICKHOUSE_USER"},
	{"clickhouse-password", "OFFLINEBOX_CLICKHOUSE_PASSWORD"},
	{"clickhouse-cluster", "OFFLINEBOX_CLICKHOUSE_CLUSTER"},
	{"prefix", "OFFLINEBOX_PREFIX"},
	{"listen", "OFFLINEBOX_LISTEN"},
	{"metrics-listen", "OFFLINEBOX_METRICS_LISTEN"},
	{"jwt-secret", "OFFLINEBOX_JWT_SECRET"},
	{"node", "OFFLINEBOX_NODE"},
	{"key-file", "OFFLINEBOX_KEY_FILE"},
	{"drift-threshold", "OFFLINEBOX_DRIFT_THRESHOLD"},
	{"retention-policy", "OFFLINEBOX_RETENTION_POLICY"},
	{"live-bus-format", "OFFLINEBOX_LIVE_BUS_FORMAT"},
}

// bind registers the stack flags on fs with their built-in defaults; the
// environment and the env file are applied by resolve after parsing, so
// that -h never prints a secret taken from them.
func (c *stackConfig) bind(fs *flag.FlagSet) {
	fs.StringVar(&c.Kafka, "kafka", "127.0.0.1:9092", "Kafka seed brokers, comma separated (env OFFLINEBOX_KAFKA)")
	fs.StringVar(&c.Redis, "redis", "127.0.0.1:6379", "Redis address; several comma separated with -redis-cluster (env OFFLINEBOX_REDIS)")
	fs.BoolVar(&c.RedisCluster, "redis-cluster", false, "Redis is a cluster (env OFFLINEBOX_REDIS_CLUSTER=1)")
	fs.StringVar(&c.HotRedis, "hot-redis", "", "separate Redis for hot accounts' inboxes (env OFFLINEBOX_HOT_REDIS)")
	fs.StringVar(&c.ClickHouse, "clickhouse", "127.0.0.1:9000", "ClickHouse native address (env OFFLINEBOX_CLICKHOUSE)")
	fs.StringVar(&c.ClickHouseDB, "clickhouse-db", "offlinebox", "ClickHouse database (env OFFLINEBOX_CLICKHOUSE_DB)")
	fs.StringVar(&c.ClickHouseUser, "clickhouse-user", "default", "ClickHouse user (env OFFLINEBOX_CLICKHOUSE_USER)")
	fs.StringVar(&c.ClickHousePass, "clickhouse-password", "", "ClickHouse password (env OFFLINEBOX_CLICKHOUSE_PASSWORD; never printed)")
	fs.StringVar(&c.ClickHouseCluster, "clickhouse-cluster", "", "cluster of the ClickHouse servers' remote_servers whose shards hold the history; empty for one server (env OFFLINEBOX_CLICKHOUSE_CLUSTER)")
	fs.StringVar(&c.Prefix, "prefix", "ob:", "Redis key prefix (env OFFLINEBOX_PREFIX)")
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8080", "HTTP API address (env OFFLINEBOX_LISTEN)")
	fs.StringVar(&c.MetricsListen, "metrics-listen", "127.0.0.1:9464", "Prometheus /metrics address of the process (the API's port does not serve it); empty to disable (env OFFLINEBOX_METRICS_LISTEN)")
	fs.StringVar(&c.JWTSecret, "jwt-secret", "", "HS256 secret for bearer tokens (env OFFLINEBOX_JWT_SECRET; never printed); required by the API")
	fs.StringVar(&c.KeyFile, "key-file", "", "master key file (JSON lines {\"id\",\"key\"}, newest last) bodies are sealed with; without it or "+masterKeysEnv+" bodies are stored in the clear (env OFFLINEBOX_KEY_FILE)")
	fs.Uint64Var(&c.DriftThreshold, "drift-threshold", census.DefaultDriftThreshold, "device census: seqs (summed over conversations) by which a user's devices may differ before they count as drifted (env OFFLINEBOX_DRIFT_THRESHOLD)")
	fs.StringVar(&c.RetentionPolicy, "retention-policy", "", "retention policy file (YAML; reloaded on SIGHUP or when it changes); empty: the built-in windows (env OFFLINEBOX_RETENTION_POLICY)")
	fs.StringVar(&c.LiveBusFormat, "live-bus-format", string(live.DefaultFormat), "form the push stage and the API nodes publish batches in on the live bus: json, which every release's API nodes read, or binary, once every API node runs a release that reads it (env OFFLINEBOX_LIVE_BUS_FORMAT)")
	fs.StringVar(&c.Node, "node", "", "API node id on the live bus, unique per API process; random when empty (env OFFLINEBOX_NODE)")
	fs.IntVar(&c.Partitions, "partitions", 8, "partitions of each topic when offlinebox creates them")
	fs.DurationVar(&c.SessionTimeout, "session-timeout", 0, "consumer group session timeout: how soon a dead worker's partitions move (0: the client's default, 45s)")
}

// resolve fills every stack flag that was not given on the command line
// from the environment, then from src's env file. all holds every stack
// flag (bind), given the subcommand's own flag set, which may hold a few.
func (c *stackConfig) resolve(all, given *flag.FlagSet, src sources) error {
	onLine := map[string]bool{}
	given.Visit(func(f *flag.Flag) { onLine[f.Name] = true })
	fs := all
	c.origin = map[string]string{}
	for _, s := range stackSettings {
		if onLine[s.flag] {
			continue
		}
		v, from, ok := src.lookup(s.env)
		if !ok {
			continue
		}
		if err := fs.Set(s.flag, v); err != nil {
			return fmt.Errorf("%s (from %s): %w", s.env, from, err)
		}
		c.origin[s.flag] = from
	}
	return nil
}

// from names where flag's value came from when not the command line or the
// default: " (from env OFFLINEBOX_REDIS)".
func (c *stackConfig) from(flag string) string {
	if o := c.origin[flag]; o != "" {
		return " (from " + o + ")"
	}
	return ""
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
	case badAddr(c.Redis, c.RedisCluster) != nil:
		return fmt.Errorf("-redis: %w", badAddr(c.Redis, c.RedisCluster))
	case c.HotRedis != "" && badAddr(c.HotRedis, c.RedisCluster) != nil:
		return fmt.Errorf("-hot-redis: %w", badAddr(c.HotRedis, c.RedisCluster))
	case c.Partitions < 1:
		return fmt.Errorf("-partitions: %d is below 1", c.Partitions)
	case c.SessionTimeout < 0:
		return fmt.Errorf("-session-timeout: %s is negative", c.SessionTimeout)
	case live.Format(c.LiveBusFormat).Validate() != nil:
		return fmt.Errorf("-live-bus-format: %w", live.Format(c.LiveBusFormat).Validate())
	case needSecret && len(c.JWTSecret) < 16:
		return fmt.Errorf("-jwt-secret: required, at least 16 bytes (env OFFLINEBOX_JWT_SECRET, or run `offlinebox demo`, which writes %s)", defaultEnvFile)
	}
	return nil
}

// badAddr says why addr is no Redis address (redisstore.ParseAddr).
func badAddr(addr string, cluster bool) error {
	_, err := redisstore.ParseAddr(addr, cluster)
	return err
}

// callTimeout bounds every outbound call a subcommand makes on its own.
const callTimeout = 10 * time.Second

// toolWait is how long a one-shot tool (verify, history sql, migrate,
// rebuild) waits for a store before it gives up with one line.
const toolWait = 4 * time.Second
