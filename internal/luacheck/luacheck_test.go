package luacheck

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestRewriteGuardsTheScriptsItKnowsByShaOrSourceAndNotesTheOthers(t *testing.T) {
	g := NewGuard(t)
	src := "return redis.call('GET', KEYS[1])"
	g.Add("get.lua", src)
	g.Add("lib_only_lib.lua", "local x = 1")
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	ctx := context.Background()
	for _, cmd := range []redis.Cmder{redis.NewCmd(ctx, "EVALSHA", sha, 1, "k"), redis.NewCmd(ctx, "eval", src, 1, "k")} {
		g.Rewrite(cmd)
		args := cmd.Args()
		if args[0] != "eval" || !strings.HasPrefix(args[1].(string), g.prelude) || !strings.HasSuffix(args[1].(string), src) {
			t.Fatalf("a known script became %v", args[:2])
		}
	}
	other := redis.NewCmd(ctx, "evalsha", "beef", 0)
	g.Rewrite(other)
	if other.Args()[0] != "evalsha" || !slices.Equal(g.Unknown(), []string{"beef"}) {
		t.Fatalf("an unknown script was rewritten (%v) or not noted (%v)", other.Args(), g.Unknown())
	}
	if !g.Ran("get.lua") || len(g.NotRun()) != 0 {
		t.Fatalf("ran %v, not run %v; want get.lua run and the library not listed", g.Ran("get.lua"), g.NotRun())
	}
}

func TestHeaderEndsAtTheFirstStatementAndConstantsReadTheUpperCaseLocals(t *testing.T) {
	src := "-- a script\nlocal KEY = KEYS[1]\nlocal STATUS_DONE, STATUS_RACED = 1, 2\nlocal REFUSAL_X = 'OBX'\n\nlocal v = redis.call('GET', KEY)\nreturn ARGV[2]"
	lines := strings.Split(src, "\n")
	if got := Header(lines); got != 5 {
		t.Fatalf("header of %d lines, want 5 (up to the redis.call)", got)
	}
	if ref := FixedArg.FindString(lines[6]); ref != "ARGV[2]" {
		t.Fatalf("FixedArg found %q in %q", ref, lines[6])
	}
	want := map[string]string{"KEY": "KEYS[1]", "STATUS_DONE": "1", "STATUS_RACED": "2", "REFUSAL_X": "OBX"}
	got := Constants(src)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}
