package chstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/offlinebox/offlinebox/schemas"
)

// ErrInvalid marks input no retry can fix: a bad argument, or a record the
// table cannot hold. Nothing was written or read. It wraps
// schemas.ErrInvalid, so callers may test for either.
var ErrInvalid = fmt.Errorf("chstore: %w", schemas.ErrInvalid)

// Store is offlinebox's ClickHouse history: the messages table, its
// migrations, retention and the analysts' read-only door. It is safe for
// concurrent use.
type Store struct {
	cfg       Config
	conn      driver.Conn
	closeOnce sync.Once
	closeErr  error
}

// Open returns a Store. It does not wait for the server: connections are
// made on first use, so a process can start while ClickHouse is still down
// and its calls fail (and are retried by the caller) until it is up.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	conn, err := openConn(cfg, cfg.Database)
	if err != nil {
		return nil, fmt.Errorf("open clickhouse %s: %w", cfg.Addr, err)
	}
	return &Store{cfg: cfg, conn: conn}, nil
}

// openConn opens a native-protocol pool whose default database is db (the
// user's default database when db is empty).
func openConn(cfg Config, db string) (driver.Conn, error) {
	var settings clickhouse.Settings
	if cfg.Cluster != "" {
		settings = clickhouse.Settings{
			// An insert returns once every shard has its rows, so that an
			// offset is committed only after they are durable where they live.
			"insert_distributed_sync": 1,
		}
	}
	return clickhouse.Open(&clickhouse.Options{
		Settings:     settings,
		Protocol:     clickhouse.Native,
		Addr:         cfg.addrs(),
		Auth:         clickhouse.Auth{Database: db, Username: cfg.Username, Password: cfg.Password},
		DialTimeout:  cfg.DialTimeout,
		ReadTimeout:  cfg.ReadTimeout,
		MaxOpenConns: cfg.MaxOpenConns,
		MaxIdleConns: min(cfg.MaxOpenConns, 5),
		Compression:  &clickhouse.Compression{Method: clickhouse.CompressionLZ4},
		ClientInfo: clickhouse.ClientInfo{Products: []struct{ Name, Version string }{
			{Name: "offlinebox", Version: "1"},
		}},
	})
}

// Config returns the effective configuration.
func (s *Store) Config() Config { return s.cfg }

// Ping checks that the server answers and the database exists.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	if err := s.conn.Ping(ctx); err != nil {
		return fmt.Errorf("ping clickhouse %s: %w", s.cfg.Addr, err)
	}
	return nil
}

// Close releases the connections. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.conn.Close() })
	return s.closeErr
}
