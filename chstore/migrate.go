package chstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/offlinebox/offlinebox/schemas"
)

// migrationsTable records which versions of schemas/clickhouse are applied.
const migrationsTable = "schema_migrations"

// Migrate creates the database if needed and applies every migration of
// schemas/clickhouse not yet recorded as applied, in version order.
//
// Running it again, or from several processes at once, is harmless: each
// statement is CREATE ... IF NOT EXISTS (or otherwise safe to repeat), and a
// version recorded twice is the same fact twice.
//
// With Config.Cluster set it migrates every shard's own tables and makes
// the Distributed tables over them (see cluster.go).
func (s *Store) Migrate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DDLTimeout)
	defer cancel()
	if s.cfg.Cluster != "" {
		return s.migrateCluster(ctx)
	}
	migrations, err := schemas.ClickHouseMigrations()
	if err != nil {
		return err
	}
	if err := s.createDatabase(ctx); err != nil {
		return err
	}
	err = s.conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+migrationsTable+` (
		version    UInt32,
		name       String,
		applied_at DateTime('UTC')
	) ENGINE = ReplacingMergeTree() ORDER BY version`)
	if err != nil {
		return fmt.Errorf("create %s.%s: %w", s.cfg.Database, migrationsTable, err)
	}
	applied, err := s.AppliedMigrations(ctx)
	if err != nil {
		return err
	}
	for _, m := range migrations {
		if applied[m.Version] {
			continue
		}
		if err := s.apply(ctx, m); err != nil {
			return err
		}
		s.cfg.Logger.Info("clickhouse migration applied", "database", s.cfg.Database, "migration", m.Name)
	}
	return nil
}

// createDatabase runs through a connection of its own: the store's pool
// names the database as its default, and the server refuses such a
// connection while the database does not exist.
func (s *Store) createDatabase(ctx context.Context) error {
	admin, err := openConn(s.cfg, "")
	if err != nil {
		return fmt.Errorf("open clickhouse %s: %w", s.cfg.Addr, err)
	}
	defer admin.Close()
	if err := admin.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+s.cfg.Database); err != nil {
		return fmt.Errorf("create database %s: %w", s.cfg.Database, err)
	}
	return nil
}

func (s *Store) apply(ctx context.Context, m schemas.ClickHouseMigration) error {
	for i, stmt := range m.Statements {
		if err := s.conn.Exec(ctx, stmt); err != nil && !columnExists(stmt, err) {
			return fmt.Errorf("migration %s statement %d: %w", m.Name, i+1, err)
		}
	}
	batch, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+migrationsTable+" (version, name, applied_at)")
	if err != nil {
		return fmt.Errorf("record migration %s: %w", m.Name, err)
	}
	defer batch.Abort()
	if err := batch.Append(uint32(m.Version), m.Name, time.Now().UTC()); err != nil {
		return fmt.Errorf("record migration %s: %w", m.Name, err)
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("record migration %s: %w", m.Name, err)
	}
	return nil
}

// errColumnExists is ClickHouse's code for adding a column a table has.
const errColumnExists = 44

// columnExists reports an ADD COLUMN that a crashed earlier run already
// did: ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS, and a migration
// must be safe to run again.
func columnExists(stmt string, err error) bool {
	var ex *clickhouse.Exception
	return errors.As(err, &ex) && ex.Code == errColumnExists && strings.Contains(strings.ToUpper(stmt), "ADD COLUMN")
}

// AppliedMigrations returns the versions recorded as applied.
func (s *Store) AppliedMigrations(ctx context.Context) (map[int]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	versions, err := collect(ctx, s.conn, "SELECT DISTINCT version FROM "+migrationsTable, nil,
		func(rows driver.Rows, v *uint32) error { return rows.Scan(v) })
	if err != nil {
		return nil, fmt.Errorf("read %s.%s: %w", s.cfg.Database, migrationsTable, err)
	}
	applied := make(map[int]bool, len(versions))
	for _, v := range versions {
		applied[int(v)] = true
	}
	return applied, nil
}
