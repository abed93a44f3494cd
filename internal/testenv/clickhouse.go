package testenv

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// ClickHouseAddr returns host:port of the native protocol of a running
// clickhouse-server: the one named by OFFLINEBOX_TEST_CLICKHOUSE, else one
// started for this test binary.
func ClickHouseAddr(t testing.TB) string {
	t.Helper()
	if addr := os.Getenv("OFFLINEBOX_TEST_CLICKHOUSE"); addr != "" {
		return addr
	}
	addr, err := own.start(&own.ch, "clickhouse", startOwnClickHouse)
	if err != nil {
		missing(t, "clickhouse-server", err)
	}
	return addr
}

// ClickHouse creates a database no other test uses, dropped when the test
// ends, and returns a native-protocol connection whose default database it
// is, together with its name.
func ClickHouse(t testing.TB) (driver.Conn, string) {
	t.Helper()
	addr := ClickHouseAddr(t)
	db := UniqueDatabase(t)
	admin, err := openClickHouse(addr, "")
	if err != nil {
		t.Fatalf("open clickhouse %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := admin.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+db); err != nil {
		missing(t, "clickhouse-server", fmt.Errorf("create database %s on %s: %w", db, addr, err))
	}
	// Registered after admin's Close, so it runs before it.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+db); err != nil {
			t.Logf("drop database %s: %v", db, err)
		}
	})
	conn, err := openClickHouse(addr, db)
	if err != nil {
		t.Fatalf("open clickhouse %s database %s: %v", addr, db, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn, db
}

// UniqueDatabase names a ClickHouse database for one test: letters, digits
// and '_' only, so it needs no quoting.
func UniqueDatabase(t testing.TB) string {
	p := UniquePrefix(t)
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		}
		return '_'
	}, strings.TrimSuffix(p, ":"))
}

func openClickHouse(addr, db string) (driver.Conn, error) {
	return clickhouse.Open(&clickhouse.Options{
		Addr:        []string{addr},
		Protocol:    clickhouse.Native,
		Auth:        clickhouse.Auth{Database: db, Username: "default"},
		DialTimeout: 5 * time.Second,
		ReadTimeout: 30 * time.Second,
	})
}
