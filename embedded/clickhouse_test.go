package embedded_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/offlinebox/offlinebox/embedded"
)

func clickhouseConn(t *testing.T, addr string) driver.Conn {
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func countRows(ctx context.Context, conn driver.Conn, table string) (uint64, error) {
	var n uint64
	err := conn.QueryRow(ctx, "SELECT count() FROM "+table).Scan(&n)
	return n, err
}

func TestClickHouseRestartKeepsTablesOnTheSamePort(t *testing.T) {
	needServer(t, "clickhouse-server")
	p, err := embedded.StartClickHouse(lifetime(t), embedded.ClickHouseOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := timeout(t, 2*time.Minute)
	conn := clickhouseConn(t, p.Addr())
	for _, q := range []string{
		"CREATE TABLE default.kept (id UInt64) ENGINE = MergeTree ORDER BY id",
		// 18.16 never answers an INSERT ... VALUES sent by clickhouse-go's
		// Exec; INSERT ... SELECT runs on the server alone.
		"INSERT INTO default.kept (id) SELECT number FROM system.numbers LIMIT 3",
	} {
		if err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// An open connection makes the server wait out its shutdown grace.
	_ = conn.Close()
	for _, stop := range []struct {
		name string
		do   func() error
	}{
		{"stop", func() error { return p.Stop(ctx) }},
		{"kill", p.Kill},
	} {
		if err := stop.do(); err != nil {
			t.Fatalf("%s: %v", stop.name, err)
		}
		if _, err := countRows(ctx, clickhouseConn(t, p.Addr()), "default.kept"); err == nil {
			t.Fatalf("server still answers after %s", stop.name)
		}
		if err := p.Restart(ctx); err != nil {
			t.Fatalf("restart after %s: %v", stop.name, err)
		}
		conn := clickhouseConn(t, p.Addr())
		n, err := countRows(ctx, conn, "default.kept")
		_ = conn.Close()
		if err != nil || n != 3 {
			t.Fatalf("after %s and restart: count = %d, %v; want 3", stop.name, n, err)
		}
	}
}

func TestTwoClickHousesRunSideBySide(t *testing.T) {
	needServer(t, "clickhouse-server")
	life := lifetime(t)
	ctx := timeout(t, time.Minute)
	var addrs []string
	for i := range 2 {
		p, err := embedded.StartClickHouse(life, embedded.ClickHouseOptions{Dir: t.TempDir()})
		if err != nil {
			t.Fatalf("server %d: %v", i, err)
		}
		addrs = append(addrs, p.Addr())
		conn := clickhouseConn(t, p.Addr())
		if err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE only_in_%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if addrs[0] == addrs[1] {
		t.Fatalf("both servers on %s", addrs[0])
	}
	var n uint64
	err := clickhouseConn(t, addrs[1]).QueryRow(ctx, "SELECT count() FROM system.databases WHERE name = 'only_in_0'").Scan(&n)
	if err != nil || n != 0 {
		t.Fatalf("second server sees the first one's database: count %d, %v", n, err)
	}
}

func TestClickHouseGivesNewerConfigsPortsAndFoldersOfTheirOwn(t *testing.T) {
	needServer(t, "clickhouse-server")
	base, err := os.ReadFile(embedded.DefaultClickHouseConfig)
	if err != nil {
		t.Skipf("no packaged config: %v", err)
	}
	// A newer server's config adds a MySQL port and a scripts folder; a
	// commented port must be left alone.
	extra := "<mysql_port>9004</mysql_port><user_scripts_path>/var/lib/clickhouse/user_scripts/</user_scripts_path>" +
		"<!-- <postgresql_port>9005</postgresql_port> -->"
	text := string(base)
	end := strings.LastIndex(text, "</")
	confDir := t.TempDir()
	config := filepath.Join(confDir, "config.xml")
	if err := os.WriteFile(config, []byte(text[:end]+extra+text[end:]), 0o644); err != nil {
		t.Fatal(err)
	}
	// The config names users.xml relative to its own folder.
	users, err := os.ReadFile(filepath.Join(filepath.Dir(embedded.DefaultClickHouseConfig), "users.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "users.xml"), users, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := embedded.StartClickHouse(lifetime(t), embedded.ClickHouseOptions{Dir: dir, ConfigFile: config})
	if err != nil {
		t.Fatal(err)
	}
	args, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.Pid()))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	cmdline := strings.ReplaceAll(string(args), "\x00", " ")
	for _, want := range []string{"--mysql_port=", "--user_scripts_path=" + filepath.Join(dir, "user_scripts")} {
		if !strings.Contains(cmdline, want) {
			t.Errorf("command line lacks %q: %s", want, cmdline)
		}
	}
	for _, unwanted := range []string{"--mysql_port=9004", "postgresql_port"} {
		if strings.Contains(cmdline, unwanted) {
			t.Errorf("command line has %q: %s", unwanted, cmdline)
		}
	}
}
