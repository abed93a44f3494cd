package rebuild

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
)

// The conventions redisstore's scripts keep (see its lua_conventions_test.go
// and lua_keys_test.go), checked on the scripts of this package.

var (
	// fixedArg is a KEYS or ARGV element named by a number; computed ones
	// (ARGV[i], ARGV[#ARGV]) walk the variable tails of the argument lists.
	fixedArg = regexp.MustCompile(`\b(KEYS|ARGV)\[\d+\]`)
	luaLocal = regexp.MustCompile(`^local ([A-Z_][A-Z_, ]*) = (.+)$`)
)

// scriptHeader is how many lines open a script before its first statement
// that is not a plain local declaration.
func scriptHeader(lines []string) int {
	for i, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case l == "", strings.HasPrefix(l, "--"):
		case strings.HasPrefix(l, "local ") && strings.Contains(l, " = ") && !strings.Contains(l, "redis.call") &&
			!strings.Contains(l, "function") && !strings.HasSuffix(l, "{"):
		default:
			return i
		}
	}
	return len(lines)
}

// scriptConstants reads the upper-case locals of a script.
func scriptConstants(src string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(src, "\n") {
		m := luaLocal.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		names, vals := strings.Split(m[1], ","), strings.Split(m[2], ",")
		for i := range min(len(names), len(vals)) {
			out[strings.TrimSpace(names[i])] = strings.Trim(strings.TrimSpace(vals[i]), "'")
		}
	}
	return out
}

func readScripts(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in lua/: %v", err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(b)
	}
	return out
}

func TestEveryScriptNamesItsKeysAndArgumentsAtItsTop(t *testing.T) {
	for name, src := range readScripts(t) {
		lines := strings.Split(src, "\n")
		for i := scriptHeader(lines); i < len(lines); i++ {
			code, _, _ := strings.Cut(lines[i], "--")
			if ref := fixedArg.FindString(code); ref != "" {
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
		consts := scriptConstants(src)
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
	g := &keysGuard{prelude: string(prelude), names: map[string]string{}, sources: map[string]string{}, ran: map[string]bool{}}
	for name, src := range readScripts(t) {
		sha := redis.NewScript(src).Hash()
		g.names[sha], g.sources[sha] = name, src
	}
	return g
}

func (g *keysGuard) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *keysGuard) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		g.guard(cmd)
		return next(ctx, cmd)
	}
}

func (g *keysGuard) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			g.guard(c)
		}
		return next(ctx, cmds)
	}
}

// guard turns an EVALSHA or EVAL of a known script into an EVAL of the
// guarded script, in place.
func (g *keysGuard) guard(cmd redis.Cmder) {
	args := cmd.Args()
	if len(args) < 2 {
		return
	}
	name := strings.ToLower(strings.TrimSpace(toString(args[0])))
	if name != "evalsha" && name != "eval" {
		return
	}
	sha := toString(args[1])
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

func toString(v any) string {
	s, _ := v.(string)
	return s
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
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, name := range g.names {
		if !g.ran[name] {
			t.Errorf("the test never ran %s: extend it", name)
		}
	}
}
