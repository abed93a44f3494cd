package chstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/embedded"
	"github.com/offlinebox/offlinebox/schemas"
)

// startShards starts two clickhouse-server children on private ports that
// form the cluster "shards" and returns their native addresses.
func startShards(t *testing.T) []string {
	t.Helper()
	if os.Getenv("OFFLINEBOX_REQUIRE_SERVERS") != "1" {
		t.Skip("starts two clickhouse-server processes; set OFFLINEBOX_REQUIRE_SERVERS=1")
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ports, err := embedded.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgFile, err := embedded.WriteClickHouseClusterConfig(filepath.Join(dir, "etc"), "", "shards", ports)
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, len(ports))
	for i, port := range ports {
		p, err := embedded.StartClickHouse(ctx, embedded.ClickHouseOptions{
			Dir: filepath.Join(dir, fmt.Sprint("shard", i)), TCPPort: port, ConfigFile: cfgFile, StopGrace: 5 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Stop(context.Background()) })
		addrs[i] = p.Addr()
	}
	return addrs
}

func TestShardedHistoryKeepsEachConversationOnOneShardAndRetentionReachesEveryShard(t *testing.T) {
	addrs := startShards(t)
	ctx := testCtx(t)
	open := func(addr, db, cluster string) *chstore.Store {
		s, err := chstore.Open(ctx, chstore.Config{Addr: addr, Database: db, Cluster: cluster})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	s := open(addrs[0]+","+addrs[1], "offlinebox", "shards")
	for range 2 { // a second run finds everything made
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	jan := writtenAt(time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC))
	mar := writtenAt(time.Date(2024, time.March, 1, 0, 0, 0, 0, time.UTC))
	convs := []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"}
	for _, c := range convs {
		if err := s.InsertBatch(ctx, append(fixture(c, 1, 10, jan), fixture(c, 11, 20, mar)...)); err != nil {
			t.Fatal(err)
		}
	}
	// Every conversation is read whole through the Distributed table, and
	// lives on exactly one shard's own table.
	perShard := make([]int, len(addrs))
	for _, c := range convs {
		page, _, err := s.History(ctx, c, 0, 0, 100)
		if err != nil || len(page) != 20 {
			t.Fatalf("History(%s) = %d rows, %v; want 20", c, len(page), err)
		}
		holders := 0
		for i, a := range addrs {
			n, err := open(a, "offlinebox_local", "").CountMessages(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				holders++
				perShard[i]++
			}
		}
		if holders != 1 {
			t.Fatalf("conversation %s is on %d shards, want 1", c, holders)
		}
	}
	if perShard[0] == 0 || perShard[1] == 0 {
		t.Fatalf("conversations per shard = %v, want both shards used", perShard)
	}
	// Deleting one conversation's January rows and dropping January reach
	// the shard that holds them.
	feb := time.Date(2024, time.February, 1, 0, 0, 0, 0, time.UTC)
	old, err := s.OldRowGroups(ctx, feb, "", 100)
	if err != nil || len(old) != len(convs) {
		t.Fatalf("OldRowGroups = %d groups, %v; want %d", len(old), err, len(convs))
	}
	groups := []chstore.RowGroup{{Conv: "c1", Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain"}}
	if err := s.DeleteRows(ctx, groups, feb); err != nil {
		t.Fatal(err)
	}
	waitNoMutations(t, s)
	if n, err := s.CountMessages(ctx, "c1"); err != nil || n != 10 {
		t.Fatalf("c1 after the delete: %d rows, %v; want 10", n, err)
	}
	dropped, err := s.DropPartitionsBefore(ctx, feb)
	if err != nil || dropped != 1 {
		t.Fatalf("DropPartitionsBefore = %d, %v; want 1 month", dropped, err)
	}
	parts, err := s.Partitions(ctx)
	if err != nil || len(parts) != 1 || parts[0].ID != "202403" || parts[0].Rows != uint64(10*len(convs)) {
		t.Fatalf("partitions after the drop = %+v, %v; want 202403 with %d rows", parts, err, 10*len(convs))
	}
	if n, err := s.CountMessages(ctx, "c2"); err != nil || n != 10 {
		t.Fatalf("c2 after the drop: %d rows, %v; want 10", n, err)
	}
}

func waitNoMutations(t *testing.T, s *chstore.Store) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		n, err := s.PendingMutations(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d mutations still pending", n)
		}
	}
}
