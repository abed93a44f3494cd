package rebuild

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/offlinebox/offlinebox/internal/luacheck"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
)

// The conventions redisstore's scripts keep (see its lua_conventions_test.go
// and lua_keys_test.go), checked on the scripts of this package.

func readScripts(t *testing.T) map[string]string {
	t.Helper()
	return luacheck.ReadScripts(t, "lua/*.lua")
}

func TestEveryScriptNamesItsKeysAndArgumentsAtItsTop(t *testing.T) {
	for name, src := range readScripts(t) {
		lines := strings.Split(src, "\n")
		for i := luacheck.Header(lines); i < len(lines); i++ {
			code, _, _ := strings.Cut(lines[i], "--")
			if ref := luacheck.FixedArg.FindString(code); ref != "" {
				t.Errorf("%s:%d uses %s below the locals at its top: %s", name, i+1, ref, strings.TrimSpace(lines[i]))
			}
		}
	}
}

func TestScriptsAndGoNameTheSameStatusCodesAndNoUnnamedRefusal(t *testing.T) {
	status := map[string]map[string]int{
		"rebuild_commit.lua": {"STATUS_DONE": commitStatusDone, "STATUS_RACED": commitStatusRaced,
			"STATUS_SHORTENED": commitStatusShortened},
	}
	unspelled := regexp.MustCompile(`error_reply\('OB`)
	scripts := readScripts(t)
	for name, src := range scripts {
		consts := luacheck.Constants(src)
		for lua, want := range status[name] {
			if got, err := strconv.Atoi(consts[lua]); err != nil || got != want {
				t.Errorf("%s names %s = %q, the Go side %d", name, lua, consts[lua], want)
			}
		}
		for lua := range consts {
			if strings.HasPrefix(lua, "REFUSAL_") {
				t.Errorf("%s names %s: this package's Go side knows no refusal", name, lua)
			}
		}
		if loc := unspelled.FindStringIndex(src); loc != nil {
			t.Errorf("%s refuses with a word it does not name as a REFUSAL_ local: %s", name, src[loc[0]:min(loc[1]+20, len(src))])
		}
	}
	for name := range status {
		if _, ok := scripts[name]; !ok {
			t.Errorf("no script %s", name)
		}
	}
	for name := range scripts {
		if _, ok := status[name]; !ok {
			t.Errorf("script %s has no status codes checked here: add them", name)
		}
	}
}

// newKeysGuard runs every script of this package behind the keys guard
// (internal/luacheck), so that a script fails as soon as it touches a key
// that is not one of its KEYS; it records which ran. The core's scripts
// pass unguarded (its own test guards them).
func newKeysGuard(t *testing.T) *luacheck.Guard {
	t.Helper()
	g := luacheck.NewGuard(t)
	g.AddScripts(t, "lua/*.lua")
	return g
}

func TestEveryScriptTouchesOnlyTheKeysItIsGiven(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	g := newKeysGuard(t)
	rdb.AddHook(g)
	st, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix, LargeGroupThreshold: 3})
	if err != nil {
		t.Fatal(err)
	}
	s := &rig{Store: st, Rebuilder: New(st), rdb: rdb, keys: st.Keys()}
	ctx := context.Background()
	h := rbSeed(t, s, "rb", expNow)
	if err := rdb.Del(ctx, s.keys.Timeline("rb"), s.keys.ConvMeta("rb")).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rebuild(ctx, h, "rb", Options{Now: expNow}); err != nil {
		t.Fatalf("rebuild under the keys guard: %v", err)
	}
	for _, name := range g.NotRun() {
		t.Errorf("the test never ran %s: extend it", name)
	}
}
