package chstore

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckAnalystStatementAcceptsSingleReadOnlyStatements(t *testing.T) {
	tests := []struct {
		name, sql, want string
	}{
		{"select", "SELECT 1", "SELECT 1"},
		{"lower case with trailing semicolon", "  select count() from messages;  ", "select count() from messages"},
		{"with", "WITH 1 AS x SELECT x", "WITH 1 AS x SELECT x"},
		{"show", "SHOW TABLES", "SHOW TABLES"},
		{"describe", "DESCRIBE TABLE messages", "DESCRIBE TABLE messages"},
		{"desc", "desc messages", "desc messages"},
		{"explain", "EXPLAIN SELECT 1", "EXPLAIN SELECT 1"},
		{"parenthesised", "(SELECT 1) UNION ALL (SELECT 2)", "(SELECT 1) UNION ALL (SELECT 2)"},
		{"leading comments", "-- daily\n/* note */ SELECT 1", "-- daily\n/* note */ SELECT 1"},
		{"semicolon in string", "SELECT 'a;DROP TABLE x' AS s", "SELECT 'a;DROP TABLE x' AS s"},
		{"escaped quote in string", `SELECT 'it\'s; ok', 'x'';y'`, `SELECT 'it\'s; ok', 'x'';y'`},
		{"semicolon in identifier", "SELECT 1 AS `a;b`", "SELECT 1 AS `a;b`"},
		{"semicolon in comment", "SELECT 1 /* ; DROP */ -- ; DROP\n", "SELECT 1 /* ; DROP */ -- ; DROP"},
		{"comment after final semicolon", "SELECT 1; -- done", "SELECT 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkAnalystStatement(tt.sql)
			if err != nil {
				t.Fatalf("checkAnalystStatement(%q) = %v", tt.sql, err)
			}
			if got != tt.want {
				t.Fatalf("checkAnalystStatement(%q) = %q, want %q", tt.sql, got, tt.want)
			}
		})
	}
}

func TestCheckAnalystStatementRejectsWritesAndSeveralStatements(t *testing.T) {
	tests := []struct {
		name, sql, reason string
	}{
		{"empty", "  ", "empty"},
		{"only comment", "-- nothing", "empty"},
		{"insert", "INSERT INTO messages (seq) VALUES (1)", "only SELECT"},
		{"drop", "DROP TABLE messages", "only SELECT"},
		{"alter", "ALTER TABLE messages DROP PARTITION ID '202401'", "only SELECT"},
		{"truncate after comment", "/* SELECT */ TRUNCATE TABLE messages", "only SELECT"},
		{"set", "SET readonly = 0", "only SELECT"},
		{"optimize", "OPTIMIZE TABLE messages FINAL", "only SELECT"},
		{"verb in quotes", "'SELECT' 1", "only SELECT"},
		{"second statement", "SELECT 1; DROP TABLE messages", "single statement"},
		{"two selects", "SELECT 1; SELECT 2;", "single statement"},
		{"into outfile", "SELECT * FROM messages INTO OUTFILE '/tmp/x'", "OUTFILE"},
		{"unterminated string", "SELECT 'abc", "unterminated"},
		{"unterminated comment", "SELECT 1 /* ", "unterminated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := checkAnalystStatement(tt.sql)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("checkAnalystStatement(%q) = %v, want ErrInvalid about %q", tt.sql, err, tt.reason)
			}
		})
	}
}
