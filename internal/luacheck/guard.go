package luacheck

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

	"github.com/redis/go-redis/v9"
)

// PreludePath is the keys guard's script, from the module's root.
const PreludePath = "redisstore/testdata/keys_guard.lua"

// Guard is a go-redis hook that turns every EVALSHA or EVAL of a script it
// knows into an EVAL of that script behind the keys guard, and records
// which scripts ran and which script calls it did not know.
type Guard struct {
	prelude string

	mu      sync.Mutex
	names   map[string]string // SHA-1 of a script → the name it was added under
	sources map[string]string // SHA-1 → source
	ran     map[string]bool
	unknown []string
}

var _ redis.Hook = (*Guard)(nil)

// NewGuard reads the keys guard (PreludePath, found from the test's
// directory up) and knows no script yet.
func NewGuard(t testing.TB) *Guard {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	prelude, err := os.ReadFile(filepath.Join(root, PreludePath))
	if err != nil {
		t.Fatal(err)
	}
	return &Guard{prelude: string(prelude), names: map[string]string{}, sources: map[string]string{}, ran: map[string]bool{}}
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("find the module root: no go.mod above the test's directory")
		}
		dir = up
	}
}

// Add makes the guard know src as name.
func (g *Guard) Add(name, src string) {
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	g.mu.Lock()
	defer g.mu.Unlock()
	g.names[sha], g.sources[sha] = name, src
}

// AddScripts adds every script of ReadScripts(glob) by its file name, as
// it is and after each of prefixes (the libraries a package prepends to
// some of its scripts: such a script is known by the file that follows
// them).
func (g *Guard) AddScripts(t testing.TB, glob string, prefixes ...string) {
	t.Helper()
	for name, src := range ReadScripts(t, glob) {
		g.Add(name, src)
		for _, p := range prefixes {
			g.Add(name, p+src)
		}
	}
}

// Rewrite turns cmd, an EVALSHA or EVAL of a known script, into an EVAL
// of the guarded script, in place; a script call it does not know is
// noted (Unknown) and left as it is.
func (g *Guard) Rewrite(cmd redis.Cmder) {
	args := cmd.Args()
	if len(args) < 2 {
		return
	}
	name := strings.ToLower(strings.TrimSpace(fmt.Sprint(args[0])))
	if name != "evalsha" && name != "eval" {
		return
	}
	sha := fmt.Sprint(args[1])
	if name == "eval" {
		sum := sha1.Sum([]byte(sha))
		sha = hex.EncodeToString(sum[:])
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	src, ok := g.sources[sha]
	if !ok {
		g.unknown = append(g.unknown, sha)
		return
	}
	g.ran[g.names[sha]] = true
	args[0], args[1] = "eval", g.prelude+src
}

// Ran reports whether a call ran the script added as name.
func (g *Guard) Ran(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ran[name]
}

// NotRun lists, sorted, the scripts added that no call ran; *_lib.lua
// files run inside others and are not listed.
func (g *Guard) NotRun() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, n := range g.names {
		if !g.ran[n] && !strings.HasSuffix(n, "_lib.lua") && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Unknown lists the SHA-1s of the script calls the guard did not know.
func (g *Guard) Unknown() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.unknown)
}

// DialHook lets dials through.
func (g *Guard) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook guards a command sent alone.
func (g *Guard) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return CommandHook(g.Rewrite).ProcessHook(next)
}

// ProcessPipelineHook guards every command of a pipeline.
func (g *Guard) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return CommandHook(g.Rewrite).ProcessPipelineHook(next)
}

// CommandHook is a go-redis hook that shows the function every command a
// client sends, alone or in a pipeline, before it goes.
type CommandHook func(redis.Cmder)

var _ redis.Hook = CommandHook(nil)

// DialHook lets dials through.
func (h CommandHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook shows h a command sent alone.
func (h CommandHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook shows h every command of a pipeline.
func (h CommandHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h(c)
		}
		return next(ctx, cmds)
	}
}
