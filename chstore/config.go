package chstore

import (
	"cmp"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"time"
)

// Config locates the ClickHouse server and bounds every call. Zero values
// take the defaults.
type Config struct {
	// Addr is host:port of the native protocol (DefaultAddr when empty);
	// several servers of one cluster may be given separated by commas.
	Addr string
	// Database holds offlinebox's tables (DefaultDatabase when empty).
	// Migrate creates it. Letters, digits and '_' only: it is written into
	// DDL unquoted.
	Database string
	// Cluster, when set, names a cluster of the servers' remote_servers
	// configuration whose shards hold the history: Migrate makes the tables
	// in LocalDatabase() on every shard and, in Database, Distributed tables
	// over them sharded by cityHash64(conv_id), so every read and insert is
	// unchanged; retention goes to the local tables of every shard. Letters,
	// digits and '_' only.
	Cluster string
	// Username and Password authenticate (DefaultUsername when empty).
	Username string
	Password string
	// DialTimeout bounds connecting to a server.
	DialTimeout time.Duration
	// ReadTimeout bounds waiting for any one packet from the server.
	ReadTimeout time.Duration
	// QueryTimeout bounds each read the store makes (History, Range, ...).
	QueryTimeout time.Duration
	// InsertTimeout bounds one InsertBatch.
	InsertTimeout time.Duration
	// DDLTimeout bounds Migrate and partition drops.
	DDLTimeout time.Duration
	// AnalystTimeout bounds one analyst Query.
	AnalystTimeout time.Duration
	// AnalystMaxRows: an analyst Query whose result is longer fails with
	// ErrTooManyRows rather than returning a silently cut result.
	AnalystMaxRows int
	// MaxOpenConns bounds the connection pool.
	MaxOpenConns int
	// Logger receives connection-level warnings (slog.Default when nil).
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultAddr           = "127.0.0.1:9000"
	DefaultDatabase       = "offlinebox"
	DefaultUsername       = "default"
	DefaultDialTimeout    = 5 * time.Second
	DefaultReadTimeout    = 60 * time.Second
	DefaultQueryTimeout   = 10 * time.Second
	DefaultInsertTimeout  = 60 * time.Second
	DefaultDDLTimeout     = 60 * time.Second
	DefaultAnalystTimeout = 60 * time.Second
	DefaultAnalystMaxRows = 10000
	DefaultMaxOpenConns   = 10
)

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (c Config) withDefaults() Config {
	c.Addr = cmp.Or(c.Addr, DefaultAddr)
	c.Database = cmp.Or(c.Database, DefaultDatabase)
	c.Username = cmp.Or(c.Username, DefaultUsername)
	c.DialTimeout = cmp.Or(c.DialTimeout, DefaultDialTimeout)
	c.ReadTimeout = cmp.Or(c.ReadTimeout, DefaultReadTimeout)
	c.QueryTimeout = cmp.Or(c.QueryTimeout, DefaultQueryTimeout)
	c.InsertTimeout = cmp.Or(c.InsertTimeout, DefaultInsertTimeout)
	c.DDLTimeout = cmp.Or(c.DDLTimeout, DefaultDDLTimeout)
	c.AnalystTimeout = cmp.Or(c.AnalystTimeout, DefaultAnalystTimeout)
	c.AnalystMaxRows = cmp.Or(c.AnalystMaxRows, DefaultAnalystMaxRows)
	c.MaxOpenConns = cmp.Or(c.MaxOpenConns, DefaultMaxOpenConns)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	c = c.withDefaults()
	for _, a := range c.addrs() {
		if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" {
			return fmt.Errorf("chstore: Addr %q is not host:port", a)
		}
	}
	if !identRE.MatchString(c.Database) {
		return fmt.Errorf("chstore: Database %q may hold only letters, digits and '_'", c.Database)
	}
	if c.Cluster != "" && !identRE.MatchString(c.Cluster) {
		return fmt.Errorf("chstore: Cluster %q may hold only letters, digits and '_'", c.Cluster)
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"DialTimeout", c.DialTimeout}, {"ReadTimeout", c.ReadTimeout},
		{"QueryTimeout", c.QueryTimeout}, {"InsertTimeout", c.InsertTimeout},
		{"DDLTimeout", c.DDLTimeout}, {"AnalystTimeout", c.AnalystTimeout},
	} {
		if d.v < 0 {
			return fmt.Errorf("chstore: %s %s is negative", d.field, d.v)
		}
	}
	switch {
	case c.AnalystMaxRows < 1:
		return fmt.Errorf("chstore: AnalystMaxRows %d is below 1", c.AnalystMaxRows)
	case c.MaxOpenConns < 1:
		return fmt.Errorf("chstore: MaxOpenConns %d is below 1", c.MaxOpenConns)
	}
	return nil
}

// addrs splits Addr into its servers.
func (c Config) addrs() []string {
	var out []string
	for _, a := range strings.Split(c.Addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return []string{c.Addr}
	}
	return out
}

// LocalDatabase is the database of the shards' own tables when Cluster is
// set.
func (c Config) LocalDatabase() string { return c.withDefaults().Database + "_local" }
