package live

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
)

// The scripts of lua/ are held to the conventions redisstore's are
// (redisstore/lua_conventions_test.go reads this folder too, for KEYS and
// ARGV named at the top and the refusal words): here, that each touches
// only the keys it is given, with redisstore's guard in front of it.

// liveKeysGuard runs every script of lua/ behind the keys guard, and
// records which ran.
type liveKeysGuard struct {
	prelude string
	sources map[string]string // SHA-1 to file name
	mu      sync.Mutex
	ran     map[string]bool
	errs    []string
}

func newLiveKeysGuard(t *testing.T) *liveKeysGuard {
	t.Helper()
	prelude, err := os.ReadFile("../redisstore/testdata/keys_guard.lua")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("list scripts: %v", err)
	}
	g := &liveKeysGuard{prelude: string(prelude), sources: map[string]string{}, ran: map[string]bool{}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha1.Sum(b)
		g.sources[hex.EncodeToString(sum[:])] = filepath.Base(f)
	}
	return g
}

func (g *liveKeysGuard) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *liveKeysGuard) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		g.guard(cmd)
		return next(ctx, cmd)
	}
}

func (g *liveKeysGuard) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			g.guard(c)
		}
		return next(ctx, cmds)
	}
}

// guard turns an EVALSHA of a script of lua/ into an EVAL of it behind
// the guard, in place; a script call it does not know is noted.
func (g *liveKeysGuard) guard(cmd redis.Cmder) {
	args := cmd.Args()
	if len(args) < 2 || !strings.EqualFold(fmt.Sprint(args[0]), "evalsha") {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	name, ok := g.sources[fmt.Sprint(args[1])]
	if !ok {
		g.errs = append(g.errs, fmt.Sprint("unknown script ", args[1]))
		return
	}
	src, err := os.ReadFile(filepath.Join("lua", name))
	if err != nil {
		g.errs = append(g.errs, err.Error())
		return
	}
	g.ran[name] = true
	args[0], args[1] = "eval", g.prelude+string(src)
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
			if len(g.errs) > 0 {
				t.Fatalf("the guard saw %v", g.errs)
			}
			for _, name := range g.sources {
				if !g.ran[name] {
					t.Errorf("the test never ran lua/%s: extend it", name)
				}
			}
		})
	}
}
