package schemas

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// The ClickHouse DDL, one migration per file named NNN_name.sql. A file may
// hold several statements, each ending with ';' at the end of a line.
//
//go:embed clickhouse/*.sql
var clickhouseDDL embed.FS

// ClickHouseMigration is one DDL file of schemas/clickhouse.
type ClickHouseMigration struct {
	// Version is the file's NNN prefix; migrations apply in ascending order
	// and a version, once recorded as applied, is never applied again.
	Version int
	// Name is the file name without the .sql suffix, e.g. "001_messages".
	Name string
	// Statements are the file's statements without their trailing ';'.
	Statements []string
}

// ClickHouseMigrations returns the embedded migrations in version order.
func ClickHouseMigrations() ([]ClickHouseMigration, error) {
	return clickhouseMigrationsFrom(clickhouseDDL, "clickhouse/*.sql")
}

func clickhouseMigrationsFrom(ddl fs.FS, pattern string) ([]ClickHouseMigration, error) {
	names, err := fs.Glob(ddl, pattern)
	if err != nil {
		return nil, fmt.Errorf("list clickhouse migrations: %w", err)
	}
	out := make([]ClickHouseMigration, 0, len(names))
	seen := make(map[int]string, len(names))
	for _, name := range names {
		m, err := parseClickHouseMigration(ddl, name)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[m.Version]; dup {
			return nil, fmt.Errorf("clickhouse migrations %s and %s share version %d", prev, name, m.Version)
		}
		seen[m.Version] = name
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

func parseClickHouseMigration(ddl fs.FS, name string) (ClickHouseMigration, error) {
	base := strings.TrimSuffix(path.Base(name), ".sql")
	prefix, _, ok := strings.Cut(base, "_")
	version, err := strconv.Atoi(prefix)
	if !ok || err != nil || version <= 0 {
		return ClickHouseMigration{}, fmt.Errorf("clickhouse migration %s: name is not NNN_name.sql", name)
	}
	text, err := fs.ReadFile(ddl, name)
	if err != nil {
		return ClickHouseMigration{}, fmt.Errorf("read clickhouse migration %s: %w", name, err)
	}
	stmts := splitDDL(string(text))
	if len(stmts) == 0 {
		return ClickHouseMigration{}, fmt.Errorf("clickhouse migration %s holds no statement", name)
	}
	return ClickHouseMigration{Version: version, Name: base, Statements: stmts}, nil
}

// splitDDL cuts a file at lines ending with ';' and drops '--' comment lines.
// The DDL is ours, so this simple rule is enough: no statement of it has a
// line ending in ';' inside a string literal.
func splitDDL(text string) []string {
	var stmts []string
	var cur strings.Builder
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			stmts = append(stmts, s)
		}
		cur.Reset()
	}
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") {
			continue
		}
		if strings.HasSuffix(trimmed, ";") {
			cur.WriteString(strings.TrimSuffix(strings.TrimRight(line, " \t\r"), ";"))
			flush()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	flush()
	return stmts
}
