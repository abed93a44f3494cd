package chstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/offlinebox/offlinebox/schemas"
)

const tagsTable = "conversation_tags"

// insertTags records the tag of every record that carries one.
func (s *Store) insertTags(ctx context.Context, msgs []*schemas.Sequenced) error {
	n := 0
	for _, m := range msgs {
		if m.GetMessage().GetTag() != "" {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	batch, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+tagsTable+" (conv_id, epoch, seq, tag, write_time)")
	if err != nil {
		return fmt.Errorf("insert %d conversation tags: prepare: %w", n, err)
	}
	defer batch.Abort()
	for _, m := range msgs {
		msg := m.GetMessage()
		if msg.GetTag() == "" {
			continue
		}
		if err := batch.Append(msg.GetConvId(), m.GetEpoch(), m.GetSeq(), msg.GetTag(), dateTimeOf(m.GetWriteTimeMs())); err != nil {
			return fmt.Errorf("insert conversation tag of %s seq %d: %w", msg.GetConvId(), m.GetSeq(), err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("insert %d conversation tags: %w", n, err)
	}
	return nil
}

// ConvTags returns the tag in force of each conversation that has one
// (the newest by epoch and seq).
func (s *Store) ConvTags(ctx context.Context, convs []string) (map[string]string, error) {
	out := make(map[string]string, len(convs))
	if len(convs) == 0 {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	tags, err := collect(ctx, s.conn, "SELECT conv_id, argMax(tag, (epoch, seq)) FROM "+tagsTable+
		" WHERE has(?, conv_id) GROUP BY conv_id", []any{convs},
		func(rows driver.Rows, ct *[2]string) error { return rows.Scan(&ct[0], &ct[1]) })
	if err != nil {
		return nil, fmt.Errorf("read tags of %d conversations: %w", len(convs), err)
	}
	for _, ct := range tags {
		out[ct[0]] = ct[1]
	}
	return out, nil
}

// ConvType returns the type the history rows of a conversation record
// (ok false when history holds none of it).
func (s *Store) ConvType(ctx context.Context, conv string) (t schemas.ConvType, ok bool, err error) {
	if err := validConv(conv); err != nil {
		return 0, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	rows, err := s.conn.Query(ctx, "SELECT toString(conv_type) FROM "+historyTable+" WHERE conv_id = ? LIMIT 1", conv)
	if err != nil {
		return 0, false, fmt.Errorf("read type of %s: %w", conv, err)
	}
	defer rows.Close()
	if !rows.Next() {
		return 0, false, rows.Err()
	}
	var name string
	if err := rows.Scan(&name); err != nil {
		return 0, false, fmt.Errorf("read type of %s: %w", conv, err)
	}
	return enumOr(schemas.ParseConvType, name), true, nil
}

// RowGroup is the history rows of one conversation with one kind and
// content type: the unit a retention policy decides on.
type RowGroup struct {
	Conv        string
	ConvType    schemas.ConvType
	Kind        schemas.Kind
	ContentType string
	// Oldest is the write time of its oldest row.
	Oldest time.Time
}

// OldRowGroups lists, after the conversation after (exclusive, "" to
// start), at most limit conversations' row groups that hold a row written
// before before, in conversation order.
// The subquery is GLOBAL so that over a sharded history it runs once,
// over every shard, and not on each shard against the Distributed table.
func (s *Store) OldRowGroups(ctx context.Context, before time.Time, after string, limit int) ([]RowGroup, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	out, err := collect(ctx, s.conn, `SELECT conv_id, toString(conv_type), toString(kind), content_type, min(write_time_ms)
		FROM `+historyTable+`
		WHERE write_time_ms < ? AND conv_id GLOBAL IN
			(SELECT DISTINCT conv_id FROM `+historyTable+` WHERE write_time_ms < ? AND conv_id > ? ORDER BY conv_id LIMIT ?)
		GROUP BY conv_id, conv_type, kind, content_type
		ORDER BY conv_id`, []any{before.UnixMilli(), before.UnixMilli(), after, limit}, func(rows driver.Rows, g *RowGroup) error {
		var ctype, kind string
		var oldest int64
		if err := rows.Scan(&g.Conv, &ctype, &kind, &g.ContentType, &oldest); err != nil {
			return err
		}
		g.ConvType = enumOr(schemas.ParseConvType, ctype)
		g.Kind = enumOr(schemas.ParseKind, kind)
		g.Oldest = time.UnixMilli(oldest).UTC()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list history rows before %s: %w", before.UTC(), err)
	}
	return out, nil
}

// DeleteRows (on every shard of a sharded history) deletes the rows of the groups written before before, in
// one mutation (ALTER TABLE ... DELETE, which ClickHouse 18.16 and current
// releases run in the background). Only Conv, Kind and ContentType of a
// group count. Mutations rewrite parts, so callers batch many groups and
// wait for PendingMutations to reach zero before asking for more.
func (s *Store) DeleteRows(ctx context.Context, groups []RowGroup, before time.Time) error {
	if len(groups) == 0 {
		return nil
	}
	if s.cfg.Cluster != "" {
		return s.onShards(ctx, func(_ string, local *Store) error { return local.DeleteRows(ctx, groups, before) })
	}
	var in strings.Builder
	args := []any{before.UnixMilli()}
	for i, g := range groups {
		if i > 0 {
			in.WriteString(", ")
		}
		in.WriteString("(?, ?, ?)")
		args = append(args, g.Conv, schemas.KindName(g.Kind), g.ContentType)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DDLTimeout)
	defer cancel()
	q := "ALTER TABLE " + historyTable + " DELETE WHERE write_time_ms < ? AND (conv_id, toString(kind), content_type) IN (" + in.String() + ")"
	if err := s.conn.Exec(ctx, q, args...); err != nil {
		return fmt.Errorf("delete history rows of %d groups before %s: %w", len(groups), before.UTC(), err)
	}
	return nil
}

// PendingMutations counts the history table's mutations not yet done
// (on every shard of a sharded history).
func (s *Store) PendingMutations(ctx context.Context) (int, error) {
	if s.cfg.Cluster != "" {
		total := 0
		err := s.onShards(ctx, func(_ string, local *Store) error {
			n, err := local.PendingMutations(ctx)
			total += n
			return err
		})
		return total, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	var n uint64
	if err := s.conn.QueryRow(ctx, "SELECT count() FROM system.mutations WHERE database = ? AND table = ? AND is_done = 0",
		s.cfg.Database, historyTable).Scan(&n); err != nil {
		return 0, fmt.Errorf("count mutations of %s.%s: %w", s.cfg.Database, historyTable, err)
	}
	return int(n), nil
}
