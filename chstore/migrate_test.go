package chstore_test

import (
	"context"
	"testing"

	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
)

func TestMigrateTwiceIsIdempotent(t *testing.T) {
	conn, db := testenv.ClickHouse(t)
	ctx := testCtx(t)
	// Two stores, as two processes would have.
	for range 2 {
		s, err := chstore.Open(context.Background(), chstore.Config{Addr: testenv.ClickHouseAddr(t), Database: db})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for range 2 {
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("migrate: %v", err)
			}
		}
	}
	want, err := schemas.ClickHouseMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var recorded uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM schema_migrations").Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if recorded != uint64(len(want)) {
		t.Fatalf("schema_migrations holds %d rows, want one per migration (%d)", recorded, len(want))
	}
	// A crash between applying a migration and recording it: the DDL runs
	// again over the existing table.
	if err := conn.Exec(ctx, "TRUNCATE TABLE schema_migrations"); err != nil {
		t.Fatal(err)
	}
	s, err := chstore.Open(context.Background(), chstore.Config{Addr: testenv.ClickHouseAddr(t), Database: db})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate over unrecorded tables: %v", err)
	}
	applied, err := s.AppliedMigrations(ctx)
	if err != nil || len(applied) != len(want) {
		t.Fatalf("applied after re-run = %v, %v; want %d versions", applied, err, len(want))
	}
	var tables uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = 'messages'", db).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 1 {
		t.Fatalf("messages tables in %s = %d, want 1", db, tables)
	}
}

func TestMigrateCreatesTheDatabase(t *testing.T) {
	conn, scratch := testenv.ClickHouse(t)
	db := scratch + "_new" // does not exist yet
	t.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db) })
	s, err := chstore.Open(context.Background(), chstore.Config{Addr: testenv.ClickHouseAddr(t), Database: db})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ping(testCtx(t)); err == nil {
		t.Fatalf("ping before migrate succeeded; database %s should not exist yet", db)
	}
	if err := s.Migrate(testCtx(t)); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if n, err := s.CountMessages(testCtx(t), "c1"); err != nil || n != 0 {
		t.Fatalf("count on the new database = %d, %v; want 0, nil", n, err)
	}
}
