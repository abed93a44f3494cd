package chstore

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// A sharded history (Config.Cluster set) keeps the tables the migrations
// of schemas/clickhouse make in LocalDatabase() on every shard, unchanged,
// and gives each of them a Distributed twin of the same name in Database on
// every shard. The sharding key is cityHash64(conv_id): a conversation's
// rows, tags and key live on one shard, so the reads' `LIMIT 1 BY` and
// argMax collapse there as on one server. Distributed DDL (ON CLUSTER)
// needs ZooKeeper, so Migrate and retention visit the shards one by one.

// shardAddrs lists the native address of every server of the cluster, as
// the servers' remote_servers configuration names them.
func (s *Store) shardAddrs(ctx context.Context) ([]string, error) {
	admin, err := openConn(Config{Addr: s.cfg.Addr, Username: s.cfg.Username, Password: s.cfg.Password,
		DialTimeout: s.cfg.DialTimeout, ReadTimeout: s.cfg.ReadTimeout, MaxOpenConns: 1}, "")
	if err != nil {
		return nil, fmt.Errorf("open clickhouse %s: %w", s.cfg.Addr, err)
	}
	defer admin.Close()
	qctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	out, err := collect(qctx, admin, "SELECT host_address, port FROM system.clusters WHERE cluster = ? ORDER BY shard_num, replica_num",
		[]any{s.cfg.Cluster}, func(rows driver.Rows, addr *string) error {
			var host string
			var port uint16
			err := rows.Scan(&host, &port)
			*addr = net.JoinHostPort(host, strconv.Itoa(int(port)))
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("read shards of cluster %s: %w", s.cfg.Cluster, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("chstore: cluster %s is not in the servers' remote_servers", s.cfg.Cluster)
	}
	return out, nil
}

// onShards runs fn with a store of every shard's own tables in turn,
// stopping at the first error.
func (s *Store) onShards(ctx context.Context, fn func(addr string, local *Store) error) error {
	addrs, err := s.shardAddrs(ctx)
	if err != nil {
		return err
	}
	for _, addr := range addrs {
		cfg := s.cfg
		cfg.Addr, cfg.Database, cfg.Cluster, cfg.MaxOpenConns = addr, s.cfg.LocalDatabase(), "", 2
		local, err := Open(ctx, cfg)
		if err != nil {
			return err
		}
		err = fn(addr, local)
		_ = local.Close()
		if err != nil {
			return fmt.Errorf("shard %s: %w", addr, err)
		}
	}
	return nil
}

// migrateCluster migrates every shard's own tables, then makes (or, when
// a migration changed the columns, remakes) their Distributed twins.
func (s *Store) migrateCluster(ctx context.Context) error {
	return s.onShards(ctx, func(addr string, local *Store) error {
		if err := local.Migrate(ctx); err != nil {
			return err
		}
		cfg := s.cfg
		cfg.Addr, cfg.MaxOpenConns = addr, 2
		front, err := Open(ctx, cfg)
		if err != nil {
			return err
		}
		defer front.Close()
		if err := front.createDatabase(ctx); err != nil {
			return err
		}
		return front.createDistributed(ctx)
	})
}

// createDistributed gives every table of the local database (but the
// migrations' record) a Distributed twin in the store's database.
func (s *Store) createDistributed(ctx context.Context) error {
	local := s.cfg.LocalDatabase()
	counts := func(db string) (map[string]uint64, error) {
		type columns struct {
			table string
			n     uint64
		}
		tables, err := collect(ctx, s.conn, "SELECT table, count() FROM system.columns WHERE database = ? GROUP BY table", []any{db},
			func(rows driver.Rows, c *columns) error { return rows.Scan(&c.table, &c.n) })
		if err != nil {
			return nil, fmt.Errorf("list tables of %s: %w", db, err)
		}
		out := make(map[string]uint64, len(tables))
		for _, c := range tables {
			out[c.table] = c.n
		}
		return out, nil
	}
	want, err := counts(local)
	if err != nil {
		return err
	}
	have, err := counts(s.cfg.Database)
	if err != nil {
		return err
	}
	for table, n := range want {
		if table == migrationsTable || have[table] == n {
			continue
		}
		if have[table] != 0 {
			if err := s.conn.Exec(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
				return fmt.Errorf("drop distributed %s.%s: %w", s.cfg.Database, table, err)
			}
		}
		q := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s AS %s.%s ENGINE = Distributed('%s', '%s', '%s', cityHash64(conv_id))",
			table, local, table, s.cfg.Cluster, local, table)
		if err := s.conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("create distributed %s.%s: %w", s.cfg.Database, table, err)
		}
		s.cfg.Logger.Info("clickhouse distributed table made", "database", s.cfg.Database, "table", table, "cluster", s.cfg.Cluster)
	}
	return nil
}

// shardPartitions merges the partitions of every shard's own history.
func (s *Store) shardPartitions(ctx context.Context) ([]Partition, error) {
	byID := map[string]*Partition{}
	var order []string
	err := s.onShards(ctx, func(_ string, local *Store) error {
		parts, err := local.Partitions(ctx)
		for _, p := range parts {
			m, ok := byID[p.ID]
			if !ok {
				p := p
				byID[p.ID], order = &p, append(order, p.ID)
				continue
			}
			m.Rows += p.Rows
			if p.MinWriteTime.Before(m.MinWriteTime) {
				m.MinWriteTime = p.MinWriteTime
			}
			if p.MaxWriteTime.After(m.MaxWriteTime) {
				m.MaxWriteTime = p.MaxWriteTime
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(order)
	out := make([]Partition, 0, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
	}
	return out, nil
}
