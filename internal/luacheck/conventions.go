package luacheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// FixedArg is a KEYS or ARGV element named by a number; computed ones
	// (ARGV[i], ARGV[#ARGV]) walk the variable tails of the argument lists.
	FixedArg = regexp.MustCompile(`\b(KEYS|ARGV)\[\d+\]`)
	luaLocal = regexp.MustCompile(`^local ([A-Z_][A-Z_, ]*) = (.+)$`)
)

// Header is how many lines open a script before its first statement
// that is not a plain local declaration: comments, blank lines and locals
// that call nothing.
func Header(lines []string) int {
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

// Constants reads the upper-case locals of a script: its status codes and
// refusal words.
func Constants(src string) map[string]string {
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

// ReadScripts reads the scripts glob matches (lua/*.lua), by file name;
// it fails t when there is none.
func ReadScripts(t testing.TB, glob string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts match %s: %v", glob, err)
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
