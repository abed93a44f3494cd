package chstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// ErrTooManyRows: an analyst query's result is longer than
// Config.AnalystMaxRows. Add a LIMIT or aggregate further.
var ErrTooManyRows = errors.New("chstore: result has too many rows")

// Query runs one read-only statement for an analyst and returns its column
// names and rows, every value rendered as text (NULL for a null).
//
// Two locks keep it read-only: the statement must be a single SELECT, WITH,
// SHOW, DESCRIBE or EXPLAIN (else ErrInvalid, and nothing is sent), and the
// server runs it with readonly=1, which also forbids changing settings from
// inside the statement.
func (s *Store) Query(ctx context.Context, sql string) (columns []string, rows [][]string, err error) {
	stmt, err := checkAnalystStatement(sql)
	if err != nil {
		return nil, nil, fmt.Errorf("analyst query: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.AnalystTimeout)
	defer cancel()
	ctx = clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"readonly": 1}))
	res, err := s.conn.Query(ctx, stmt)
	if err != nil {
		return nil, nil, fmt.Errorf("analyst query: %w", err)
	}
	// Cancelling first makes Close abandon a long result instead of reading it.
	defer res.Close()
	defer cancel()
	columns = res.Columns()
	types := res.ColumnTypes()
	dest := make([]any, len(types))
	dateOnly := make([]bool, len(types))
	for i, t := range types {
		name := strings.TrimSuffix(strings.TrimPrefix(t.DatabaseTypeName(), "Nullable("), ")")
		dateOnly[i] = name == "Date" || name == "Date32"
		st := t.ScanType()
		if st == nil {
			st = reflect.TypeFor[any]()
		}
		dest[i] = reflect.New(st).Interface()
	}
	for res.Next() {
		if len(rows) == s.cfg.AnalystMaxRows {
			return nil, nil, fmt.Errorf("analyst query: %w: more than %d", ErrTooManyRows, s.cfg.AnalystMaxRows)
		}
		if err := res.Scan(dest...); err != nil {
			return nil, nil, fmt.Errorf("analyst query: row %d: %w", len(rows)+1, err)
		}
		row := make([]string, len(dest))
		for i, d := range dest {
			row[i] = formatValue(reflect.ValueOf(d).Elem(), false, dateOnly[i])
		}
		rows = append(rows, row)
	}
	if err := res.Err(); err != nil {
		return nil, nil, fmt.Errorf("analyst query: %w", err)
	}
	return columns, rows, nil
}

// formatValue renders a scanned value roughly as clickhouse-client does in
// its TSV output; inside arrays, strings are quoted. Dates and times both
// scan into time.Time; dateOnly says which it was.
func formatValue(v reflect.Value, nested, dateOnly bool) string {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return "NULL"
		}
		v = v.Elem()
	}
	switch x := v.Interface().(type) {
	case time.Time:
		if dateOnly {
			return x.Format(time.DateOnly)
		}
		if x.Nanosecond() != 0 {
			return x.Format("2006-01-02 15:04:05.000000")
		}
		return x.Format("2006-01-02 15:04:05")
	case []byte:
		return quoteIf(string(x), nested)
	case string:
		return quoteIf(x, nested)
	case fmt.Stringer:
		return x.String()
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = formatValue(v.Index(i), true, dateOnly)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case reflect.Map:
		parts := make([]string, 0, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			parts = append(parts, formatValue(iter.Key(), true, false)+":"+formatValue(iter.Value(), true, false))
		}
		sort.Strings(parts)
		return "{" + strings.Join(parts, ",") + "}"
	}
	return fmt.Sprint(v.Interface())
}

func quoteIf(s string, quote bool) string {
	if !quote {
		return s
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
