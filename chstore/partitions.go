package chstore

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Partition is one month of the history table (by write time, UTC).
type Partition struct {
	// ID is the partition id, YYYYMM.
	ID string
	// MinWriteTime and MaxWriteTime bound the write times of its rows, to the
	// second.
	MinWriteTime time.Time
	MaxWriteTime time.Time
	// Rows counts stored rows, replays included.
	Rows uint64
}

// End returns the first instant after the month the partition covers.
func (p Partition) End() (time.Time, error) {
	month, err := time.Parse("200601", p.ID)
	if err != nil {
		return time.Time{}, fmt.Errorf("partition id %q is not YYYYMM: %w", p.ID, err)
	}
	return month.AddDate(0, 1, 0), nil
}

// Partitions lists the history table's partitions, oldest first.
func (s *Store) Partitions(ctx context.Context) ([]Partition, error) {
	if s.cfg.Cluster != "" {
		return s.shardPartitions(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	out, err := collect(ctx, s.conn, `SELECT partition_id, min(min_time), max(max_time), sum(rows)
		FROM system.parts WHERE database = ? AND table = ? AND active
		GROUP BY partition_id ORDER BY partition_id`, []any{s.cfg.Database, historyTable},
		func(rows driver.Rows, p *Partition) error {
			err := rows.Scan(&p.ID, &p.MinWriteTime, &p.MaxWriteTime, &p.Rows)
			p.MinWriteTime, p.MaxWriteTime = p.MinWriteTime.UTC(), p.MaxWriteTime.UTC()
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("list partitions of %s.history: %w", s.cfg.Database, err)
	}
	return out, nil
}

// DropPartitionsBefore drops every month of history that ends at or before
// cutoff, and returns how many partitions it dropped. A month that ends
// after cutoff is kept whole, so no row written at or after cutoff is ever
// dropped: retention keeps a little more than asked, never less.
//
// On a sharded history every shard drops its own months, and the count
// is of months dropped on any shard.
func (s *Store) DropPartitionsBefore(ctx context.Context, cutoff time.Time) (int, error) {
	if s.cfg.Cluster != "" {
		most := 0
		err := s.onShards(ctx, func(_ string, local *Store) error {
			n, err := local.DropPartitionsBefore(ctx, cutoff)
			most = max(most, n)
			return err
		})
		return most, err
	}
	parts, err := s.Partitions(ctx)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DDLTimeout)
	defer cancel()
	dropped := 0
	for _, p := range parts {
		end, err := p.End()
		if err != nil {
			return dropped, fmt.Errorf("retention of %s.history: %w", s.cfg.Database, err)
		}
		if end.After(cutoff) {
			continue
		}
		// The id is YYYYMM digits (checked by End), safe to quote as is.
		if err := s.conn.Exec(ctx, "ALTER TABLE "+historyTable+" DROP PARTITION ID '"+p.ID+"'"); err != nil {
			return dropped, fmt.Errorf("drop partition %s of %s.history: %w", p.ID, s.cfg.Database, err)
		}
		dropped++
		s.cfg.Logger.Info("clickhouse partition dropped", "database", s.cfg.Database,
			"partition", p.ID, "rows", p.Rows, "cutoff", cutoff.UTC())
	}
	return dropped, nil
}
