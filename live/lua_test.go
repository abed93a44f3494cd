package live

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/internal/luacheck"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
)

// The scripts of lua/ are held to the conventions redisstore's are
// (redisstore/lua_conventions_test.go reads this folder too, for KEYS and
// ARGV named at the top and the refusal words): here, that each touches
// only the keys it is given, with redisstore's guard in front of it.

// newLiveKeysGuard runs every script of lua/ behind the keys guard
// (internal/luacheck), and records which ran.
func newLiveKeysGuard(t *testing.T) *luacheck.Guard {
	t.Helper()
	g := luacheck.NewGuard(t)
	g.AddScripts(t, "lua/*.lua")
	return g
}

func TestEveryScriptOfLiveTouchesOnlyTheKeysItIsGiven(t *testing.T) {
	for _, setup := range []struct {
		name string
		bus  func(*Bus)
	}{{"sharded", nil}, {"classic", classic}} {
		t.Run(setup.name, func(t *testing.T) {
			rdb, prefix := testenv.Redis(t)
			g := newLiveKeysGuard(t)
			rdb.AddHook(g)
			s, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			bus := NewBus(rdb, 5*time.Second)
			if setup.bus != nil {
				setup.bus(bus)
			}
			keys := s.Keys()
			if err := rdb.HSet(ctx, keys.ConvMeta("g"), "mver", 2).Err(); err != nil {
				t.Fatal(err)
			}
			sent, err := bus.PublishUnchanged(ctx, keys, []ChannelBatch{
				{Conv: "g", Audience: redisstore.PushAudience{Version: 2}, Batch: Batch{Envelopes: []Envelope{{Kind: KindPush, Conv: "g", Record: []byte("as read")}}}},
				{Conv: "g", Audience: redisstore.PushAudience{Version: 1}, Batch: Batch{Envelopes: []Envelope{{Kind: KindPush, Conv: "g", Record: []byte("changed since")}}}},
			})
			if err != nil {
				t.Fatalf("publish behind the keys guard: %v", err)
			}
			if !slices.Equal(sent, []bool{true, false}) {
				t.Fatalf("published %v, want [true false]", sent)
			}
			if unknown := g.Unknown(); len(unknown) > 0 {
				t.Fatalf("the guard saw scripts it does not know: %v", unknown)
			}
			for _, name := range g.NotRun() {
				t.Errorf("the test never ran lua/%s: extend it", name)
			}
		})
	}
}
