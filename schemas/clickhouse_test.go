package schemas

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

func TestSplitDDLCutsAtLineEndSemicolonsAndDropsComments(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"one statement", "CREATE TABLE a (x UInt8) ENGINE = Log;\n", []string{"CREATE TABLE a (x UInt8) ENGINE = Log"}},
		{"two statements over lines", "-- why\nCREATE TABLE a\n(x UInt8);\n\nALTER TABLE a ADD COLUMN y UInt8;", []string{"CREATE TABLE a\n(x UInt8)", "ALTER TABLE a ADD COLUMN y UInt8"}},
		{"last statement without semicolon", "SELECT 1;\nSELECT 2\n", []string{"SELECT 1", "SELECT 2"}},
		{"semicolon inside a line is kept", "SELECT ';' AS s;\n", []string{"SELECT ';' AS s"}},
		{"only comments", "-- nothing\n\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := splitDDL(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("splitDDL(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestClickHouseMigrationsAreOrderedByVersion(t *testing.T) {
	ddl := fstest.MapFS{
		"d/010_later.sql":  {Data: []byte("SELECT 10;")},
		"d/002_second.sql": {Data: []byte("SELECT 2;")},
		"d/001_first.sql":  {Data: []byte("SELECT 1;")},
		"d/notes.txt":      {Data: []byte("not a migration")},
		"d/sub/003_x.sql":  {Data: []byte("SELECT 3;")},
	}
	got, err := clickhouseMigrationsFrom(ddl, "d/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range got {
		names = append(names, m.Name)
	}
	if want := []string{"001_first", "002_second", "010_later"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("order = %v, want %v", names, want)
	}
}

func TestClickHouseMigrationsRejectBadFiles(t *testing.T) {
	tests := []struct {
		name  string
		files fstest.MapFS
		want  string
	}{
		{"no version prefix", fstest.MapFS{"d/messages.sql": {Data: []byte("SELECT 1;")}}, "not NNN_name.sql"},
		{"version zero", fstest.MapFS{"d/000_x.sql": {Data: []byte("SELECT 1;")}}, "not NNN_name.sql"},
		{"duplicate version", fstest.MapFS{"d/001_a.sql": {Data: []byte("SELECT 1;")}, "d/01_b.sql": {Data: []byte("SELECT 1;")}}, "share version 1"},
		{"empty file", fstest.MapFS{"d/001_a.sql": {Data: []byte("-- nothing\n")}}, "holds no statement"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := clickhouseMigrationsFrom(tt.files, "d/*.sql")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestEmbeddedClickHouseMigrationsCreateMessagesFirst(t *testing.T) {
	got, err := ClickHouseMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0].Version != 1 {
		t.Fatalf("migrations = %+v, want version 1 first", got)
	}
	if !strings.Contains(got[0].Statements[0], "CREATE TABLE IF NOT EXISTS messages") {
		t.Fatalf("first statement = %q, want the messages table", got[0].Statements[0])
	}
}
