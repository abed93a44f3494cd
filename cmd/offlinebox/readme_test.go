package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/seal"
)

func readme(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// readmeCommands are the README's command lines (indented code) that
// start with `offlinebox`, split into words, without their comment.
func readmeCommands(t *testing.T) [][]string {
	var out [][]string
	for _, line := range strings.Split(readme(t), "\n") {
		if !strings.HasPrefix(line, "    offlinebox ") {
			continue
		}
		line = strings.TrimSpace(line)
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		out = append(out, strings.Fields(line)[1:])
	}
	return out
}

// helpOf is what `offlinebox args... -h` lists.
func helpOf(t *testing.T, args []string) string {
	t.Helper()
	out, err := runHelp(t, append(append([]string{}, args...), "-h")...)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("%v -h: %v", args, err)
	}
	return out
}

// TestEveryREADMECommandIsASubcommandWithItsFlagsAndTheStorelessOnesRun
// checks each README command line against the binary: its subcommand
// (and verb) exist and -h lists every flag it passes; the ones that need
// no store run and succeed.
func TestEveryREADMECommandIsASubcommandWithItsFlagsAndTheStorelessOnesRun(t *testing.T) {
	cmds := readmeCommands(t)
	if len(cmds) < 20 {
		t.Fatalf("found %d README commands; the extraction broke", len(cmds))
	}
	groups := map[string]bool{"keys": true, "retention": true}
	for _, words := range cmds {
		if words[0] == "--version" {
			continue
		}
		head := words[:1]
		if groups[words[0]] || (words[0] == "history" && len(words) > 1 && words[1] == "sql") {
			head = words[:2]
		}
		help := helpOf(t, head)
		if !strings.Contains(help, "usage: offlinebox "+strings.Join(head, " ")) {
			t.Errorf("README runs `offlinebox %s`, which is no subcommand:\n%s", strings.Join(words, " "), help)
			continue
		}
		for _, w := range words[len(head):] {
			if strings.HasPrefix(w, "-") && !strings.Contains(help, "  "+w+" ") && !strings.Contains(help, "  "+w+"\n") {
				t.Errorf("README passes %s to `offlinebox %s`, whose -h does not list it", w, strings.Join(head, " "))
			}
		}
	}
	dir := t.TempDir()
	t.Setenv("OFFLINEBOX_JWT_SECRET", strings.Repeat("k", 32))
	t.Setenv(envFileVar, filepath.Join(dir, "none.env"))
	runnable := [][]string{
		{"token", "alice", "-device", "phone"},
		{"token", "bob", "-device", "laptop"},
		{"retention", "explain", "-type", "group", "-tag", "T"},
		{"keys", "add", "-id", "k2", "-key-file", filepath.Join(dir, "keys.jsonl")},
	}
	for _, args := range runnable {
		for _, c := range subcommands() {
			if c.name == args[0] {
				if err := c.run(context.Background(), args[1:], io.Discard); err != nil {
					t.Errorf("offlinebox %s: %v", strings.Join(args, " "), err)
				}
			}
		}
	}
}

var volatile = regexp.MustCompile(`\d+(\.\d+)?(µs|ms|s|m)?`)

// TestTheREADMEDemoSampleHasTheShapeOfARun compares the README's demo
// summary with a run's, line by line, numbers and durations aside, and
// the order of the indented lines under a heading aside too: the list's
// rows follow activity, and conversations written in the same instant
// may come in either order.
func TestTheREADMEDemoSampleHasTheShapeOfARun(t *testing.T) {
	testenv.RedisAddr(t) // skips, or fails under make test, without the servers installed
	text := readme(t)
	start := strings.Index(text, "```\nofflinebox demo: alice")
	if start < 0 {
		t.Fatal("README has no demo sample")
	}
	sample := text[start+4:]
	sample = sample[:strings.Index(sample, "```")]
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := runDemo(ctx, []string{"--once", "-data", t.TempDir(), "-listen", "127.0.0.1:0", "-metrics-listen", ""}, &out); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	mask := func(s string) []string {
		lines := strings.Split(strings.TrimSpace(volatile.ReplaceAllString(s, "N")), "\n")
		for i := 0; i < len(lines); {
			j := i
			for j < len(lines) && strings.HasPrefix(lines[j], " ") {
				j++
			}
			slices.Sort(lines[i:j])
			i = max(j, i+1)
		}
		return lines
	}
	got, want := mask(out.String()), mask(sample)
	if len(got) != len(want) {
		t.Fatalf("a run prints %d lines, the README's sample %d:\nrun:\n%s\nREADME:\n%s", len(got), len(want), out.String(), sample)
	}
	for i := range got {
		if strings.Join(strings.Fields(got[i]), " ") != strings.Join(strings.Fields(want[i]), " ") {
			t.Errorf("line %d: run %q, README %q", i+1, got[i], want[i])
		}
	}
}

// TestComposeSealsBodiesWithItsLocalMasterKey: the compose stack's
// processes get a master key by default, one the key ring accepts.
func TestComposeSealsBodiesWithItsLocalMasterKey(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`OFFLINEBOX_MASTER_KEYS: \$\{OFFLINEBOX_MASTER_KEYS:-([^}]+)\}`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("docker-compose.yml gives the processes no default OFFLINEBOX_MASTER_KEYS: bodies would be stored in the clear")
	}
	keys, err := seal.ParseKeyList(string(m[1]))
	if err == nil {
		_, err = seal.NewFileRing(keys)
	}
	if err != nil {
		t.Errorf("compose's master key %q: %v", m[1], err)
	}
}
