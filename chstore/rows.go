package chstore

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// querier is what a read queries: the store's connection, or one opened
// to a single server of the cluster.
type querier interface {
	Query(ctx context.Context, query string, args ...any) (driver.Rows, error)
}

// collect runs q with args and reads every row it answers into a T with
// scan, so that the store's reads share one loop. The query's, a row's and
// the rows' own errors come back as they are, for the caller to say what
// it read; on one, nothing read is returned.
func collect[T any](ctx context.Context, db querier, q string, args []any, scan func(rows driver.Rows, v *T) error) ([]T, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := scan(rows, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
