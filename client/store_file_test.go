package client

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
)

// The database is created readable by its user alone, its WAL too, and a
// path holding the characters a file: URI reads ('?', '#', '%') names
// the file it says, not a shorter one with options after it.
func TestTheStoreFileIsTheUsersAloneAndItsPathIsTakenAsItIs(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"plain.db", "who?mode=memory#x.db", "100% sure.db", "tab\tname.db"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			st, err := OpenStore(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.DB().ExecContext(ctx, `INSERT INTO cursors (conv_id, epoch, seq) VALUES ('g', 1, 1)`); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{path, path + "-wal"} {
				fi, err := os.Stat(f)
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				if m := fi.Mode().Perm(); m != 0o600 {
					t.Errorf("%s has mode %v, want 0600", filepath.Base(f), m)
				}
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() != name && e.Name() != name+"-wal" && e.Name() != name+"-shm" {
					t.Errorf("the store made %q beside %q", e.Name(), name)
				}
			}
			again, err := OpenStore(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			cs, err := again.Cursors(ctx)
			if err != nil || cs["g"].Seq != 1 {
				t.Fatalf("reopened, the cursors are %v (%v), want g at 1", cs, err)
			}
		})
	}
}

// A database made before refusals carried a code gets the column when it
// is opened, and keeps the refusals it held.
func TestAStoreFromBeforeRefusalCodesGetsTheCodeColumn(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := sql.Open("sqlite", fileURI(path))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.ExecContext(ctx, `CREATE TABLE rejected (client_msg_id TEXT PRIMARY KEY, conv_id TEXT NOT NULL,
		request BLOB NOT NULL, reason TEXT NOT NULL, at_ms INTEGER NOT NULL);
		INSERT INTO rejected VALUES ('m1', 'g', '{"conv_id":"g","client_msg_id":"m1"}', 'not a member', 5)`); err != nil {
		t.Fatal(err)
	}
	_ = old.Close()
	st, err := OpenStore(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var code, reason string
	if err := st.DB().QueryRowContext(ctx, `SELECT code, reason FROM rejected WHERE client_msg_id = 'm1'`).Scan(&code, &reason); err != nil {
		t.Fatal(err)
	}
	if code != "" || reason != "not a member" {
		t.Fatalf("the old refusal reads code %q reason %q", code, reason)
	}
}
