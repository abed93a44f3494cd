package testenv

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

func TestUniquePrefixDiffersPerCallAndHasNoHashTag(t *testing.T) {
	a, b := UniquePrefix(t), UniquePrefix(t)
	if a == b {
		t.Fatalf("two prefixes are both %q", a)
	}
	for _, p := range []string{a, b} {
		if strings.ContainsAny(p, "{}") {
			t.Fatalf("prefix %q holds a brace and would change the key's hash slot", p)
		}
	}
}

func TestClickHouseDatabaseIsDroppedWhenTheTestEnds(t *testing.T) {
	var db string
	t.Run("user", func(t *testing.T) {
		conn, name := ClickHouse(t)
		db = name
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := conn.Exec(ctx, "CREATE TABLE t (x UInt8) ENGINE = Memory"); err != nil {
			t.Fatalf("create a table in the test database: %v", err)
		}
	})
	if t.Failed() || t.Skipped() {
		return
	}
	admin, err := openClickHouse(ClickHouseAddr(t), "")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n uint64
	if err := admin.QueryRow(ctx, "SELECT count() FROM system.databases WHERE name = ?", db).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s still exists after its test ended", db)
	}
}

func TestRedisClusterReadsBackPrefixedKeysFromEverySlotOwner(t *testing.T) {
	rdb, prefix := RedisCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		key := fmt.Sprintf("%s{c:%d}:seq", prefix, i)
		if err := rdb.Set(ctx, key, i, time.Minute).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		got, err := rdb.Get(ctx, key).Int()
		if err != nil || got != i {
			t.Fatalf("GET %s = %d, %v; want %d", key, got, err, i)
		}
	}
	masters := 0
	for _, s := range rdb.ClusterShards(ctx).Val() {
		if len(s.Slots) > 0 {
			masters++
		}
	}
	if masters != 3 {
		t.Fatalf("cluster has %d masters with slots, want 3", masters)
	}
}

// helperEnv makes the test binary a child that starts its own redis-server,
// prints it, and exits through Main.
const helperEnv = "OFFLINEBOX_TESTENV_MAIN_HELPER"

func TestMainStopsSelfStartedServersAndRemovesTheirFolder(t *testing.T) {
	if os.Getenv(helperEnv) == "1" {
		fmt.Println("addr", RedisAddr(t))
		return
	}
	RedisAddr(t) // skips here when redis-server is missing
	child := exec.Command(os.Args[0], "-test.run=^TestMainStopsSelfStartedServersAndRemovesTheirFolder$")
	child.Env = append(withoutServerEnv(), helperEnv+"=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	_ = child.Wait()
	if !strings.HasPrefix(line, "addr 127.0.0.1:") {
		t.Fatalf("helper printed %q, want its redis address", line)
	}
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-*", dirPrefix, child.Process.Pid)))
	if len(left) > 0 {
		t.Fatalf("folders left after the binary exited: %v", left)
	}
}

// withoutServerEnv is the environment minus the variables that name shared
// servers, so a child test binary starts its own.
func withoutServerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OFFLINEBOX_TEST_") {
			env = append(env, kv)
		}
	}
	return env
}
