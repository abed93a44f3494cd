package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"github.com/offlinebox/offlinebox/redisstore/rebuild"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runHelp runs args in-process and returns what -h wrote and the error
// main would exit with (nil and flag.ErrHelp exit 0).
func runHelp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var buf bytes.Buffer
	old := helpOutput
	helpOutput = &buf
	defer func() { helpOutput = old }()
	for _, c := range subcommands() {
		if c.name == args[0] {
			err := c.run(context.Background(), args[1:], io.Discard)
			return buf.String(), err
		}
	}
	t.Fatalf("no subcommand %q", args[0])
	return "", nil
}

func TestEverySubcommandAndVerbAnswersHelpWithExitZero(t *testing.T) {
	var all [][]string
	for _, c := range subcommands() {
		all = append(all, []string{c.name, "-h"})
	}
	all = append(all, []string{"keys", "add", "-h"}, []string{"keys", "list", "-h"}, []string{"keys", "rekey", "-h"},
		[]string{"keys", "retire", "-h"}, []string{"retention", "explain", "-h"}, []string{"retention", "check", "-h"}, []string{"retention", "apply", "-h"}, []string{"revoke", "-h"}, []string{"repair-evicted", "-h"},
		[]string{"history", "sql", "-h"}, []string{"keys", "--help"}, []string{"retention", "help"})
	for _, args := range all {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, err := runHelp(t, args...)
			if err != nil && !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("%v: %v (exits non-zero)", args, err)
			}
			if args[0] != "demo" && !strings.Contains(out, "usage: offlinebox "+args[0]) {
				t.Errorf("%v wrote no usage line:\n%s", args, out)
			}
		})
	}
}

func TestHelpListsOnlyTheFlagsASubcommandReads(t *testing.T) {
	cases := []struct {
		args       []string
		want, none []string
	}{
		{[]string{"token", "-h"}, []string{"-ttl", "-device", "-jwt-secret"}, []string{"-kafka", "-redis", "-clickhouse"}},
		{[]string{"probe", "-h"}, nil, []string{"-kafka", "-redis", "-log-level"}},
		{[]string{"verify", "-h"}, []string{"-redis", "-prefix", "-key-file"}, []string{"-kafka", "-listen", "-jwt-secret", "-partitions", "-drift-threshold"}},
		{[]string{"history", "sql", "-h"}, []string{"-clickhouse", "-clickhouse-db"}, []string{"-redis", "-kafka", "-listen", "-metrics-listen"}},
		{[]string{"keys", "add", "-h"}, []string{"-id", "-key-file"}, []string{"-redis", "-kafka", "-clickhouse"}},
		{[]string{"retention", "check", "-h"}, []string{"-retention-policy", "-redis", "-against"}, []string{"-kafka", "-listen", "-jwt-secret"}},
		{[]string{"revoke", "-h"}, []string{"-user", "-device", "-redis"}, []string{"-kafka", "-clickhouse", "-listen"}},
		{[]string{"migrate", "-h"}, []string{"-kafka", "-clickhouse", "-partitions"}, []string{"-redis", "-listen", "-jwt-secret"}},
		{[]string{"fanout", "-h"}, []string{"-kafka", "-redis", "-metrics-listen", "-session-timeout"}, []string{"-listen", "-jwt-secret", "-retention-policy", "-live-bus-format"}},
		{[]string{"push", "-h"}, []string{"-redis", "-session-timeout", "-live-bus-format"}, []string{"-listen", "-jwt-secret", "-retention-policy"}},
		{[]string{"api", "-h"}, []string{"-listen", "-jwt-secret", "-node", "-redis", "-live-bus-format"}, []string{"-drift-threshold", "-retention-policy", "-session-timeout"}},
		{[]string{"all", "-h"}, []string{"-listen", "-kafka", "-retention-policy", "-drift-threshold"}, nil},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out, _ := runHelp(t, c.args...)
			for _, w := range c.want {
				if !strings.Contains(out, "  "+w+" ") && !strings.Contains(out, "  "+w+"\n") {
					t.Errorf("-h does not list %s:\n%s", w, out)
				}
			}
			for _, n := range c.none {
				if strings.Contains(out, "  "+n+" ") || strings.Contains(out, "  "+n+"\n") {
					t.Errorf("-h lists %s, which it does not read:\n%s", n, out)
				}
			}
		})
	}
}

func TestAGroupWithoutAVerbOrWithAnUnknownOneFailsNamingTheVerbs(t *testing.T) {
	for _, args := range [][]string{{"keys"}, {"keys", "-id", "x"}, {"keys", "frob"}, {"retention"}, {"retention", "frob"}} {
		_, err := runHelp(t, args...)
		if err == nil || errors.Is(err, flag.ErrHelp) || !strings.Contains(err.Error(), "rekey") && !strings.Contains(err.Error(), "explain") {
			t.Errorf("%v: %v, want an error naming the verbs", args, err)
		}
	}
}

func TestTokenRefusesATTLThatIsNotPositive(t *testing.T) {
	for _, ttl := range []string{"-1h", "0s"} {
		err := runToken(context.Background(), []string{"alice", "-ttl", ttl, "-jwt-secret", strings.Repeat("s", 32)}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "-ttl") {
			t.Errorf("token -ttl %s: %v, want a refusal naming -ttl", ttl, err)
		}
	}
	var out bytes.Buffer
	if err := runToken(context.Background(), []string{"alice", "-ttl", "1m", "-jwt-secret", strings.Repeat("s", 32)}, &out); err != nil || out.Len() == 0 {
		t.Errorf("token -ttl 1m: %v, %q", err, out.String())
	}
}

func TestRebuildSummaryNeverReadsAsALossOfMembers(t *testing.T) {
	kept := describeRebuild(rebuild.Result{Conv: "g", Seq: 9, First: 1, Entries: 9, Members: rebuild.MembersKept})
	if strings.Contains(kept, "(0)") || !strings.Contains(kept, "member list left as Redis holds it") {
		t.Errorf("kept: %q", kept)
	}
	restored := describeRebuild(rebuild.Result{Conv: "g", Members: rebuild.MembersRestored, MemberCount: 4})
	if !strings.Contains(restored, "4 members restored") {
		t.Errorf("restored: %q", restored)
	}
}

func TestHistorySQLShowsSealedAndBinaryCellsAsMarkers(t *testing.T) {
	cols := []string{"seq", "body", "sealed_epoch"}
	cases := []struct{ row, want []string }{
		{[]string{"1", "\x8a\x01\xffcipher", "3"}, []string{"1", "<sealed 9 B>", "3"}},
		{[]string{"2", "hello", "0"}, []string{"2", "hello", "0"}},
		{[]string{"3", "a\x00b", "0"}, []string{"3", "<binary 3 B>", "0"}},
	}
	for _, c := range cases {
		if got := printableRow(cols, c.row); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("printableRow(%q) = %q, want %q", c.row, got, c.want)
		}
	}
}

// TestVersionNamesTheCommitWhenBuiltFromAGitCheckout builds as `make
// build` does and reads --version.
func TestVersionNamesTheCommitWhenBuiltFromAGitCheckout(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	bin := filepath.Join(t.TempDir(), "offlinebox")
	build := exec.Command("make", "-s", "-C", "../..", "build", "BIN="+bin)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "commit " + strings.TrimSpace(string(head))[:12]; !strings.Contains(string(out), want) {
		t.Errorf("--version = %q, want it to name %s", out, want)
	}
}

func TestRetentionExplainByTypeNeedsNoConversation(t *testing.T) {
	var out bytes.Buffer
	if err := runRetention(context.Background(), []string{"explain", "-type", "group", "-tag", "finance"}, &out); err != nil {
		t.Fatalf("explain -type group: %v", err)
	}
	if !strings.Contains(out.String(), `group, tag "finance" (from flags)`) {
		t.Errorf("explain -type group:\n%s", out.String())
	}
	if err := runRetention(context.Background(), []string{"explain"}, io.Discard); err == nil || !strings.Contains(err.Error(), "-conv") {
		t.Errorf("explain with neither -conv nor -type: %v, want a refusal naming -conv", err)
	}
}
