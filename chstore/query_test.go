package chstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/internal/testenv"
)

func TestQueryRefusesWritesAndChangesNothing(t *testing.T) {
	s, _ := replayedStore(t)
	ctx := testCtx(t)
	for _, sql := range []string{
		"DROP TABLE messages",
		"TRUNCATE TABLE messages",
		"ALTER TABLE messages DROP PARTITION ID '202405'",
		"INSERT INTO messages (conv_id, seq) VALUES ('a', 301)",
		"SELECT 1; DROP TABLE messages",
		"SET readonly = 0",
	} {
		if _, _, err := s.Query(ctx, sql); !errors.Is(err, chstore.ErrInvalid) {
			t.Errorf("Query(%q) = %v, want ErrInvalid", sql, err)
		}
	}
	if n, err := s.CountMessages(ctx, "a"); err != nil || n != 300 {
		t.Fatalf("after refused writes CountMessages(a) = %d, %v; want 300", n, err)
	}
}

func TestQueryRunsWithReadonlyOnTheServer(t *testing.T) {
	s := newStore(t)
	// It reads as a SELECT, so only the server's readonly=1 refuses it.
	_, _, err := s.Query(testCtx(t), "SELECT 1 SETTINGS readonly = 0")
	if err == nil || errors.Is(err, chstore.ErrInvalid) {
		t.Fatalf("Query with SETTINGS readonly = 0 = %v, want the server to refuse it", err)
	}
	if !strings.Contains(strings.ToLower(err.Error()), "readonly") {
		t.Fatalf("server refusal %q does not mention readonly", err)
	}
}

func TestQueryRendersValuesAsText(t *testing.T) {
	s, want := replayedStore(t)
	cols, rows, err := s.Query(testCtx(t), `SELECT conv_id, seq, kind, recipients, mentions, mention_all,
		write_time, toDate(write_time) AS day, CAST(NULL AS Nullable(String)) AS nothing
		FROM messages WHERE conv_id = 'a' AND seq = 4 ORDER BY write_time DESC LIMIT 1`)
	if err != nil {
		t.Fatal(err)
	}
	m := want[4]
	wt := m.GetWriteTimeMs() / 1000
	wantRow := []string{"a", "4", "message", "[]", "['" + m.GetMessage().GetMentions()[0] + "']", "0",
		timeText(wt), timeText(wt)[:10], "NULL"}
	if !slices.Equal(cols, []string{"conv_id", "seq", "kind", "recipients", "mentions", "mention_all", "write_time", "day", "nothing"}) {
		t.Fatalf("columns = %q", cols)
	}
	if len(rows) != 1 || !slices.Equal(rows[0], wantRow) {
		t.Fatalf("rows = %q, want [%q]", rows, wantRow)
	}
}

func TestQueryFailsRatherThanCutsALongResult(t *testing.T) {
	_, db := testenv.ClickHouse(t)
	s, err := chstore.Open(context.Background(), chstore.Config{Addr: testenv.ClickHouseAddr(t), Database: db, AnalystMaxRows: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tests := []struct {
		limit   string
		wantErr bool
	}{{"5", false}, {"6", true}}
	for _, tt := range tests {
		_, rows, err := s.Query(testCtx(t), "SELECT number FROM system.numbers LIMIT "+tt.limit)
		if tt.wantErr != errors.Is(err, chstore.ErrTooManyRows) || (!tt.wantErr && (err != nil || len(rows) != 5)) {
			t.Fatalf("LIMIT %s: %d rows, %v; want error %v", tt.limit, len(rows), err, tt.wantErr)
		}
	}
}

func TestQueryRunsShowAndDescribe(t *testing.T) {
	s := newStore(t)
	tests := []struct {
		sql, column, value string
	}{
		{"SHOW TABLES", "name", "messages"},
		{"DESCRIBE TABLE messages", "name", "write_time_ms"},
		{"WITH 2 AS two SELECT two * 21 AS answer", "answer", "42"},
	}
	for _, tt := range tests {
		cols, rows, err := s.Query(testCtx(t), tt.sql)
		if err != nil {
			t.Fatalf("Query(%q): %v", tt.sql, err)
		}
		i := slices.Index(cols, tt.column)
		if i < 0 || !slices.ContainsFunc(rows, func(r []string) bool { return r[i] == tt.value }) {
			t.Fatalf("Query(%q) = %q %q, want a row with %s = %s", tt.sql, cols, rows, tt.column, tt.value)
		}
	}
}
