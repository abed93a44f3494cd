package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const holdPolicy = `defaults:
  inbox: 30d
  history: 365d
policies:
  - name: legal-hold
    match: {tag: legal}
    audit_hold: 7y
`

// holdDropped is holdPolicy without its hold: what was left of a file an
// editor cut short.
const holdDropped = "defaults:\n  inbox: 30d\n  history: 365d\n"

func TestRetentionCheckShowsTheChangeAndApplyConfirmsAShrinkOnlyWhenAllowed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := newTestStores(t)
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hold, short := file("hold.yaml", holdPolicy), file("short.yaml", holdDropped)
	longer := file("longer.yaml", strings.Replace(holdPolicy, "7y", "10y", 1))
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := runRetention(ctx, append(append([]string{args[0]}, st.flags(t)...), args[1:]...), &out)
		return out.String(), err
	}
	if out, err := run("apply", hold); err != nil || !strings.Contains(out, "no policy confirmed yet") {
		t.Fatalf("first apply: %v\n%s", err, out)
	}
	steps := []struct {
		name    string
		args    []string
		refused bool
		want    []string
	}{
		{"check a file that drops the hold", []string{"check", short}, true, []string{
			"against the policy in force: " + hold + ", confirmed (apply)",
			"holds dropped: 1\n  policy \"legal-hold\" (tag=legal, audit_hold 2555d) is gone",
			"tag legal, direct, message: kept in history 2555d -> 365d",
			"kept times that grow: 0",
		}},
		{"check a longer hold", []string{"check", longer}, false, []string{
			"kept times that shrink: 0", "tag legal, group, message: kept in history 2555d -> 3650d", "a reload would put it in force",
		}},
		{"apply the shrink unconfirmed", []string{"apply", short}, true, []string{"holds dropped: 1"}},
		{"apply the shrink with --allow-shrink", []string{"apply", "--allow-shrink", short}, false, []string{"confirmed (apply -allow-shrink)"}},
		{"check the confirmed file", []string{"check", short}, false, []string{"confirmed (apply -allow-shrink)", "a reload would put it in force"}},
		{"check against a file, without the stores", []string{"check", "-against", longer, hold}, true, []string{"against " + longer, "audit hold 3650d -> 2555d"}},
	}
	for _, s := range steps {
		out, err := run(s.args...)
		if (err != nil) != s.refused {
			t.Fatalf("%s: error %v, want refused %v\n%s", s.name, err, s.refused, out)
		}
		for _, w := range s.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", s.name, w, out)
			}
		}
	}
}

// TestARunningExpiryProcessRefusesAnEmptyOrShrunkPolicyOnSIGHUP drives the
// binary: an expiry process with a 7-year hold is sent SIGHUP after its
// file was emptied, cut to "defaults:", and stripped of the hold; each is
// refused (the metric says why), the hold stays confirmed in Redis, and
// only `retention apply -allow-shrink` lets the shorter file in.
func TestARunningExpiryProcessRefusesAnEmptyOrShrunkPolicyOnSIGHUP(t *testing.T) {
	st := newTestStores(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "offlinebox")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	path := filepath.Join(dir, "retention.yaml")
	write := func(text string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(holdPolicy)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"expiry", "-retention-policy", path, "-metrics-listen", metricsAddr}, st.flags(t)...)...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	metric := func(series string) string {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, series+" "); ok {
				return v
			}
		}
		return ""
	}
	waitFor := func(series, want string, hup bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); metric(series) != want; {
			if time.Now().After(deadline) {
				t.Fatalf("%s is %q, want %s; log:\n%s", series, metric(series), want, logs.String())
			}
			if hup {
				_ = cmd.Process.Signal(syscall.SIGHUP)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("offlinebox_retention_policy_loads_total", "1", false)
	confirmed := func() string {
		d, err := st.rdb.HGet(ctx, st.redis.Keys().RetentionConfirmed(), "digest").Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	held := confirmed()
	for i, c := range []struct{ text, reason string }{
		{"", "empty"}, {"defaults:\n", "empty"}, {holdDropped, "shrink"},
	} {
		write(c.text)
		n := 1
		if c.reason == "empty" {
			n = i + 1
		}
		waitFor(fmt.Sprintf(`offlinebox_retention_reload_refused_total{reason=%q}`, c.reason), fmt.Sprint(n), true)
		if confirmed() != held {
			t.Fatalf("a refused file (%q) replaced the confirmed policy", c.text)
		}
	}
	if !strings.Contains(logs.String(), "level=WARN msg=\"retention policy refused; the previous one stays in force\"") ||
		!strings.Contains(logs.String(), "legal-hold") {
		t.Fatalf("no Warn naming the dropped hold:\n%s", logs.String())
	}
	apply := exec.CommandContext(ctx, bin, append(append([]string{"retention", "apply", "-allow-shrink"}, st.flags(t)...), path)...)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("retention apply: %v\n%s", err, out)
	}
	waitFor("offlinebox_retention_policy_loads_total", "2", true)
	if confirmed() == held {
		t.Fatal("the applied file is not the confirmed one")
	}
}
