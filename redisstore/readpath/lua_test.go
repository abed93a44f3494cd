package readpath

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
)

// The scripts of this package keep redisstore's conventions: their
// headers, status codes and refusals are checked by redisstore's
// lua_conventions_test.go (it reads readpath/lua); here they run behind
// the same keys guard as redisstore's lua_keys_test.go (a minimal copy:
// that package's test files cannot be imported).

// keysGuard runs every script of this package with redisstore's
// testdata/keys_guard.lua in front of it, so that a script fails as soon
// as it touches a key that is not one of its KEYS; it records which ran.
// The core's scripts pass unguarded (its own test guards them).
type keysGuard struct {
	prelude string
	names   map[string]string // SHA-1 of a script: its file
	sources map[string]string
	mu      sync.Mutex
	ran     map[string]bool
}

func newKeysGuard(t *testing.T) *keysGuard {
	t.Helper()
	prelude, err := os.ReadFile("../testdata/keys_guard.lua")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in lua/: %v", err)
	}
	g := &keysGuard{prelude: string(prelude), names: map[string]string{}, sources: map[string]string{}, ran: map[string]bool{}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sha := redis.NewScript(string(b)).Hash()
		g.names[sha], g.sources[sha] = filepath.Base(f), string(b)
	}
	return g
}

// guard turns an EVALSHA or EVAL of a known script into an EVAL of the
// guarded script, in place.
func (g *keysGuard) guard(cmd redis.Cmder) {
	args := cmd.Args()
	if len(args) < 2 {
		return
	}
	name, _ := args[0].(string)
	name = strings.ToLower(name)
	if name != "evalsha" && name != "eval" {
		return
	}
	sha, _ := args[1].(string)
	if name == "eval" {
		sha = redis.NewScript(sha).Hash()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	src, ok := g.sources[sha]
	if !ok {
		return
	}
	g.ran[g.names[sha]] = true
	args[0], args[1] = "eval", g.prelude+src
}

func TestEveryScriptTouchesOnlyTheKeysItIsGiven(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	g := newKeysGuard(t)
	rdb.AddHook(commandHook(g.guard))
	s := rigOver(t, rdb, redisstore.Config{Prefix: prefix, LargeGroupThreshold: 3})
	ctx := context.Background()
	rs := newReadSeed(t, s)
	rs.group("g", "ann", "bob")
	rs.say("g", group, "bob", "", "hi @ann", "ann")
	rs.say("d", direct, "bob", "ann", "hello")
	rs.group("big", "ann", "bob", "cid")
	rs.growLarge("big", "ann")
	rs.say("big", group, "bob", "", "to all")
	forgetListIndexes(t, s, "ann")
	if _, err := s.ListConversations(ctx, "ann", "phone", ListCursor{}, 10); err != nil {
		t.Errorf("list: %v", err)
	}
	if _, err := s.Sync(ctx, syncReq("ann", "phone", 10, 64<<10)); err != nil {
		t.Errorf("sync: %v", err)
	}
	if _, err := s.ReadPage(ctx, "ann", "g", PageQuery{Limit: 10}); err != nil {
		t.Errorf("read page: %v", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, name := range g.names {
		if !g.ran[name] {
			t.Errorf("the test never ran %s: extend it", name)
		}
	}
}

func TestTheKeysGuardCatchesAScriptThatBuildsAKey(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	g := newKeysGuard(t)
	rdb.AddHook(commandHook(g.guard))
	src := `return redis.call('GET', KEYS[1] .. ':other')`
	builds := redis.NewScript(src)
	g.sources[builds.Hash()], g.names[builds.Hash()] = src, "inline"
	err := builds.Run(context.Background(), rdb, []string{prefix + "{u:x}:k"}).Err()
	if err == nil || !strings.Contains(err.Error(), "not in KEYS") {
		t.Fatalf("a script reading a key it built answered %v, want the guard's error", err)
	}
}
