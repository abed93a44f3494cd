package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/chstore"
)

// History returns a history store over a ClickHouse database no other
// test uses (see ClickHouse), migrated as `offlinebox migrate` leaves it,
// and the database's name. The store is closed when the test ends, before
// the database is dropped.
func History(t testing.TB) (*chstore.Store, string) {
	t.Helper()
	_, db := ClickHouse(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := chstore.Open(ctx, chstore.Config{Addr: ClickHouseAddr(t), Database: db})
	if err != nil {
		t.Fatalf("open the history store on database %s: %v", db, err)
	}
	t.Cleanup(func() { _ = ch.Close() })
	if err := ch.Migrate(ctx); err != nil {
		t.Fatalf("migrate database %s: %v", db, err)
	}
	return ch, db
}
