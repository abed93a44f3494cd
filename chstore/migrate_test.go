package chstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
)

func TestMigrateTwiceIsIdempotent(t *testing.T) {
	conn, db := testenv.ClickHouse(t)
	ctx := testCtx(t)
	// Two stores, as two processes would have.
	for range 2 {
		s, err := chstore.Open(context.Background(), chstore.Config{Addr: testenv.ClickHouseAddr(t), Database: db})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for range 2 {
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("migrate: %v", err)
			}
		}
	}
	want, err := schemas.ClickHouseMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var recorded uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM schema_migrations").Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if recorded != uint64(len(want)) {
		t.Fatalf("schema_migrations holds %d rows, want one per migration (%d)", recorded, len(want))
	}
	// A crash between applying a migration and recording it: the DDL runs
	// again over the existing table.
	if err := conn.Exec(ctx, "TRUNCATE TABLE schema_migrations"); err != nil {
		t.Fatal(err)
	}
	s, err := chstore.Open(context.Background(), chstore.Config{Addr: testenv.ClickHouseAddr(t), Database: db})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate over unrecorded tables: %v", err)
	}
	applied, err := s.AppliedMigrations(ctx)
	if err != nil || len(applied) != len(want) {
		t.Fatalf("applied after re-run = %v, %v; want %d versions", applied, err, len(want))
	}
	var tables uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = 'messages'", db).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 1 {
		t.Fatalf("messages tables in %s = %d, want 1", db, tables)
	}
}

func TestMigrateCreatesTheDatabase(t *testing.T) {
	conn, scratch := testenv.ClickHouse(t)
	db := scratch + "_new" // does not exist yet
	t.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db) })
	s, err := chstore.Open(context.Background(), chstore.Config{Addr: testenv.ClickHouseAddr(t), Database: db})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ping(testCtx(t)); err == nil {
		t.Fatalf("ping before migrate succeeded; database %s should not exist yet", db)
	}
	if err := s.Migrate(testCtx(t)); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if n, err := s.CountMessages(testCtx(t), "c1"); err != nil || n != 0 {
		t.Fatalf("count on the new database = %d, %v; want 0, nil", n, err)
	}
}

// schemaUpTo lays out a database as the migrations up to version left it,
// each recorded as applied.
func schemaUpTo(t *testing.T, conn driver.Conn, version int) {
	t.Helper()
	stmts := []string{`CREATE TABLE IF NOT EXISTS schema_migrations (
		version UInt32, name String, applied_at DateTime('UTC')
	) ENGINE = ReplacingMergeTree() ORDER BY version`}
	for _, m := range migrationsUpTo(t, version) {
		stmts = append(stmts, m.Statements...)
	}
	for _, stmt := range stmts {
		if err := conn.Exec(testCtx(t), stmt); err != nil {
			t.Fatalf("lay out the schema up to %d: %v", version, err)
		}
	}
	recordAppliedUpTo(t, conn, version)
}

// recordAppliedUpTo records the migrations up to version as applied.
func recordAppliedUpTo(t *testing.T, conn driver.Conn, version int) {
	t.Helper()
	for _, m := range migrationsUpTo(t, version) {
		err := conn.Exec(testCtx(t), "INSERT INTO schema_migrations (version, name, applied_at) SELECT ?, ?, now()", uint32(m.Version), m.Name)
		if err != nil {
			t.Fatalf("record migration %s: %v", m.Name, err)
		}
	}
}

func migrationsUpTo(t *testing.T, version int) []schemas.ClickHouseMigration {
	t.Helper()
	migrations, err := schemas.ClickHouseMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var out []schemas.ClickHouseMigration
	for _, m := range migrations {
		if m.Version <= version {
			out = append(out, m)
		}
	}
	return out
}

// oldSchemaWithData lays out a database as 001 left it, recorded as
// applied, and inserts records into its messages table.
func oldSchemaWithData(t *testing.T, conn driver.Conn, recs []*schemas.Sequenced) {
	t.Helper()
	ctx := testCtx(t)
	schemaUpTo(t, conn, 1)
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO messages (conv_id, seq, epoch, conv_type, kind, sender, recipients, mentions, "+
		"mention_all, qos, content_type, client_msg_id, body, send_time, send_time_ms, write_time, write_time_ms)")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		m := r.Message
		all := uint8(0)
		if m.MentionAll {
			all = 1
		}
		err := batch.Append(m.ConvId, r.Seq, r.Epoch, schemas.ConvTypeName(m.ConvType), schemas.KindName(m.Kind), m.Sender,
			append([]string{}, m.Recipients...), append([]string{}, m.Mentions...), all, schemas.QoSName(m.Qos), m.ContentType,
			m.ClientMsgId, m.Body, time.UnixMilli(m.SendTimeMs).UTC(), m.SendTimeMs, time.UnixMilli(r.WriteTimeMs).UTC(), r.WriteTimeMs)
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := batch.Send(); err != nil {
		t.Fatalf("insert into the old messages table: %v", err)
	}
}

func TestMigrateMovesAnOldDatabaseToTheEpochKeyAndKeepsEveryRow(t *testing.T) {
	conn, db := testenv.ClickHouse(t)
	ctx := testCtx(t)
	const e1, e2 = uint64(1_000), uint64(2_000)
	may, june := writtenAt(time.Date(2024, 5, 3, 0, 0, 0, 0, time.UTC)), writtenAt(time.Date(2024, 6, 3, 0, 0, 0, 0, time.UTC))
	// "m" was rebuilt before the migration: epoch e2 restarted at seq 5,
	// and e1's rows 6..10 reached the history late. "n" has one epoch and
	// a replayed row.
	m1 := inEpochOf(e1, fixture("m", 1, 10, may))
	m2 := inEpochOf(e2, fixture("m", 6, 12, june))
	for _, r := range m2 {
		r.Message.Body = fmt.Appendf(nil, "rebuilt %d", r.Seq)
	}
	n1 := inEpochOf(e1, fixture("n", 1, 3, may))
	oldSchemaWithData(t, conn, slices.Concat(m1, m2, n1, n1[1:2]))

	s, err := chstore.Open(context.Background(), chstore.Config{Addr: testenv.ClickHouseAddr(t), Database: db})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := map[uint64][]*schemas.Sequenced{
		e1: m1,
		e2: slices.Concat(inEpochOf(e2, cloneAll(m1[:5])), m2),
	}
	check := func(t *testing.T) {
		t.Helper()
		applied, err := s.AppliedMigrations(ctx)
		if err != nil || !applied[1] || !applied[2] {
			t.Fatalf("applied migrations = %v, %v; want 1 and 2", applied, err)
		}
		var ddl, engine string
		if err := conn.QueryRow(ctx, "SHOW CREATE TABLE history").Scan(&ddl); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(ddl, "ORDER BY (conv_id, epoch, seq)") {
			t.Fatalf("history is not keyed by (conv_id, epoch, seq):\n%s", ddl)
		}
		if err := conn.QueryRow(ctx, "SELECT engine FROM system.tables WHERE database = ? AND name = 'messages'", db).Scan(&engine); err != nil || engine != "View" {
			t.Fatalf("messages is %q (%v), want the View over history", engine, err)
		}
		for conv, n := range map[string]uint64{"m": 17, "n": 3} {
			if got, err := s.CountMessages(ctx, conv); err != nil || got != n {
				t.Fatalf("CountMessages(%s) = %d, %v; want %d", conv, got, err, n)
			}
		}
		var viaView uint64
		if err := conn.QueryRow(ctx, "SELECT uniqExact(conv_id, epoch, seq) FROM messages").Scan(&viaView); err != nil || viaView != 20 {
			t.Fatalf("distinct rows through the messages view = %d, %v; want 20", viaView, err)
		}
		lin, err := s.Lineage(ctx, "m")
		if err != nil || len(lin) != 1 || lin[e2] != (chstore.EpochOrigin{Epoch: e2, Parent: e1, Base: 5}) {
			t.Fatalf("lineage of m = %v, %v; want e2 from e1 at 5, inferred from the rows", lin, err)
		}
		for epoch, msgs := range want {
			got := pageAll(t, s, "m", epoch, 4)
			if len(got) != len(msgs) {
				t.Fatalf("history of m epoch %d: seqs %v, want %d messages", epoch, seqsOf(got), len(msgs))
			}
			for i := range got {
				if !proto.Equal(got[i], msgs[i]) {
					t.Fatalf("history of m epoch %d, message %d = %v, want %v", epoch, i, got[i], msgs[i])
				}
			}
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate the old database: %v", err)
	}
	t.Run("migrated", check)
	// A crash before 002 was recorded runs it again over its own result.
	if err := conn.Exec(ctx, "TRUNCATE TABLE schema_migrations"); err != nil {
		t.Fatal(err)
	}
	if err := conn.Exec(ctx, "INSERT INTO schema_migrations (version, name, applied_at) SELECT 1, '001_messages', now()"); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate again: %v", err)
	}
	t.Run("migrated twice", check)
}

func cloneAll(msgs []*schemas.Sequenced) []*schemas.Sequenced {
	out := make([]*schemas.Sequenced, len(msgs))
	for i, m := range msgs {
		out[i] = proto.Clone(m).(*schemas.Sequenced)
	}
	return out
}

// Before 006 the history kept neither a join's role nor a record's
// authority; rows of that time read as what the columns default to, rows
// written after carry both, and 006 run again (a crash before it was
// recorded) finds its columns there.
func TestMigrateAddsRoleAndAuthorityWithDefaultsForEarlierRows(t *testing.T) {
	conn, db := testenv.ClickHouse(t)
	ctx := testCtx(t)
	schemaUpTo(t, conn, 5)
	at := writtenAt(time.Date(2024, 5, 3, 0, 0, 0, 0, time.UTC))
	join := func(seq uint64, role schemas.Role, auth schemas.Authority) *schemas.Sequenced {
		r := fixture("g", seq, seq, at)[0]
		r.Message.Kind, r.Message.Recipients = schemas.Kind_KIND_MEMBER_JOIN, []string{fmt.Sprint("u", seq)}
		r.Message.Role, r.Message.Authority = role, auth
		return r
	}
	// A writer of the previous version names the columns it knew.
	early := join(1, schemas.Role_ROLE_UNSPECIFIED, schemas.Authority_AUTHORITY_SENDER)
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO history (conv_id, seq, epoch, conv_type, kind, sender, recipients, mentions, "+
		"mention_all, qos, content_type, client_msg_id, body, send_time, send_time_ms, write_time, write_time_ms, sealed_epoch)")
	if err != nil {
		t.Fatal(err)
	}
	m := early.Message
	err = batch.Append(m.ConvId, early.Seq, early.Epoch, "group", "member_join", m.Sender, m.Recipients, []string{}, uint8(0),
		schemas.QoSName(m.Qos), m.ContentType, m.ClientMsgId, string(m.Body), time.UnixMilli(m.SendTimeMs).UTC(), m.SendTimeMs,
		time.UnixMilli(early.WriteTimeMs).UTC(), early.WriteTimeMs, uint64(0))
	if err == nil {
		err = batch.Send()
	}
	if err != nil {
		t.Fatalf("insert a row as the previous version wrote it: %v", err)
	}

	s, err := chstore.Open(context.Background(), chstore.Config{Addr: testenv.ClickHouseAddr(t), Database: db})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate from 005: %v", err)
	}
	later := []*schemas.Sequenced{
		join(2, schemas.Role_ROLE_ADMIN, schemas.Authority_AUTHORITY_SENDER),
		join(3, schemas.Role_ROLE_OWNER, schemas.Authority_AUTHORITY_SYSTEM),
		join(4, schemas.Role_ROLE_MEMBER, schemas.Authority_AUTHORITY_SENDER),
	}
	if err := s.InsertBatch(ctx, later); err != nil {
		t.Fatal(err)
	}
	want := append([]*schemas.Sequenced{early}, later...)
	check := func(t *testing.T) {
		t.Helper()
		got, err := s.MembershipChanges(ctx, "g", 0, 0, 10)
		if err != nil || len(got) != len(want) {
			t.Fatalf("membership changes = %d records, %v; want %d", len(got), err, len(want))
		}
		for i := range got {
			if !proto.Equal(got[i], want[i]) {
				t.Fatalf("seq %d reads %v, want %v", want[i].Seq, got[i], want[i])
			}
		}
	}
	t.Run("migrated", check)
	if err := conn.Exec(ctx, "TRUNCATE TABLE schema_migrations"); err != nil {
		t.Fatal(err)
	}
	recordAppliedUpTo(t, conn, 5)
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("run 006 again: %v", err)
	}
	t.Run("migrated twice", check)
}
