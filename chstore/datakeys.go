package chstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/offlinebox/offlinebox/schemas"
)

const dataKeysTable = "data_keys"

// insertDataKeys writes the wrapped data keys sealed records carry, one
// row per conversation of the batch, at version 0: every wrapping of a
// conversation's key opens the same key, and a record may carry one a
// process cached before a rekey, so a rekey's row (a real version) always
// wins over the records'.
func (s *Store) insertDataKeys(ctx context.Context, msgs []*schemas.Sequenced) error {
	keys := map[string]string{}
	var order []string
	for _, m := range msgs {
		w := m.GetDataKey()
		if w == "" {
			continue
		}
		conv := m.GetMessage().GetConvId()
		if _, ok := keys[conv]; !ok {
			order = append(order, conv)
		}
		keys[conv] = w
	}
	if len(order) == 0 {
		return nil
	}
	rows := make([][3]any, 0, len(order))
	for _, conv := range order {
		rows = append(rows, [3]any{conv, keys[conv], uint64(0)})
	}
	return s.putDataKeys(ctx, rows)
}

func (s *Store) putDataKeys(ctx context.Context, rows [][3]any) error {
	batch, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+dataKeysTable+" (conv_id, master_id, wrapped, version)")
	if err != nil {
		return fmt.Errorf("insert %d data keys: prepare: %w", len(rows), err)
	}
	defer batch.Abort()
	for _, r := range rows {
		w := r[1].(string)
		id, _, _ := strings.Cut(w, ":")
		if err := batch.Append(r[0], id, w, r[2]); err != nil {
			return fmt.Errorf("insert data key of %s: %w", r[0], err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("insert %d data keys: %w", len(rows), err)
	}
	return nil
}

// DataKey is conv's durable wrapped data key ("" when none).
func (s *Store) DataKey(ctx context.Context, conv string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	rows, err := s.conn.Query(ctx, "SELECT argMax(wrapped, version) FROM "+dataKeysTable+" WHERE conv_id = ? GROUP BY conv_id", conv)
	if err != nil {
		return "", fmt.Errorf("read data key of %s: %w", conv, err)
	}
	defer rows.Close()
	var w string
	if rows.Next() {
		if err := rows.Scan(&w); err != nil {
			return "", fmt.Errorf("read data key of %s: %w", conv, err)
		}
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("read data key of %s: %w", conv, err)
	}
	return w, nil
}

// PutDataKey records conv's rewrapped data key (keys rekey), newer than
// every row before it.
func (s *Store) PutDataKey(ctx context.Context, conv, wrapped string) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.InsertTimeout)
	defer cancel()
	return s.putDataKeys(ctx, [][3]any{{conv, wrapped, uint64(time.Now().UnixMilli())}})
}

// EachDataKey calls fn with every conversation's durable wrapped key.
func (s *Store) EachDataKey(ctx context.Context, fn func(conv, wrapped string) error) error {
	qctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	all, err := collect(qctx, s.conn, "SELECT conv_id, argMax(wrapped, version) FROM "+dataKeysTable+" GROUP BY conv_id ORDER BY conv_id", nil,
		func(rows driver.Rows, kv *[2]string) error { return rows.Scan(&kv[0], &kv[1]) })
	if err != nil {
		return fmt.Errorf("list data keys: %w", err)
	}
	for _, kv := range all {
		if err := fn(kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}
