package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
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

// TestToolsReachARunningDemoWithNoFlagsAndFailFastWithoutIt runs the
// binary as a new user would: `offlinebox demo` in a folder, then token,
// verify and history sql from the same folder with no flags; they find the
// demo through its env file, and the token is accepted by the demo's API.
// With the demo stopped, each fails within 10 s, exits non-zero and says
// in one line what it could not reach.
func TestToolsReachARunningDemoWithNoFlagsAndFailFastWithoutIt(t *testing.T) {
	for _, bin := range []string{"redis-server", "clickhouse-server"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("OFFLINEBOX_REQUIRE_SERVERS") == "1" {
				t.Fatalf("%s is not installed", bin)
			}
			t.Skipf("%s is not installed", bin)
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "offlinebox")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	// Nothing from the test's own environment points the tools anywhere.
	var environ []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OFFLINEBOX_") {
			environ = append(environ, kv)
		}
	}
	type result struct {
		code           int
		stdout, stderr string
		took           time.Duration
	}
	tool := func(args ...string) result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir, cmd.Env = work, environ
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		start := time.Now()
		err := cmd.Run()
		r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			r.code = ee.ExitCode()
		case err != nil:
			t.Fatalf("run %v: %v", args, err)
		}
		return r
	}

	demo := exec.Command(bin, "demo", "-listen", "127.0.0.1:0")
	demo.Dir, demo.Env = work, environ
	var demoErr bytes.Buffer
	demo.Stderr = &demoErr
	stdout, err := demo.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	serving := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "Serving on ") {
				close(serving)
			}
		}
		exited <- demo.Wait()
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = demo.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			_ = demo.Process.Kill()
			<-exited
			t.Errorf("the demo did not stop within a minute of SIGINT")
		}
	}
	t.Cleanup(stop)
	select {
	case <-serving:
	case err := <-exited:
		t.Fatalf("the demo exited before serving: %v\n%s", err, demoErr.String())
	case <-time.After(3 * time.Minute):
		t.Fatalf("the demo did not serve within 3 minutes\n%s", demoErr.String())
	}
	envFile := filepath.Join(work, ".data", envFileName)
	vals, err := readEnvFile(envFile)
	if err != nil {
		t.Fatalf("the serving demo wrote no env file: %v", err)
	}

	tok := tool("token", "bob", "-device", "laptop")
	if tok.code != 0 || strings.Count(tok.stdout, ".") != 2 {
		t.Fatalf("token against the demo: exit %d, stdout %q, stderr %q", tok.code, tok.stdout, tok.stderr)
	}
	req, _ := http.NewRequest(http.MethodGet, vals[envAPI]+"/v1/conversations", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(tok.stdout))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the demo's API answered the minted token with %d", resp.StatusCode)
	}
	if v := tool("verify"); v.code != 0 || !strings.Contains(v.stdout, "OK") {
		t.Fatalf("verify against the demo: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	if h := tool("history", "sql", "SELECT count() FROM messages"); h.code != 0 || !strings.Contains(h.stdout, "(1 rows)") {
		t.Fatalf("history sql against the demo: exit %d\n%s%s", h.code, h.stdout, h.stderr)
	}

	stop()
	if _, err := os.Stat(envFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stopped demo left its env file behind: %v", err)
	}
	// With no demo, the tools fall back to the default addresses; if
	// something else answers there, this machine cannot show the failure.
	for _, addr := range []string{"127.0.0.1:6379", "127.0.0.1:9000"} {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Skipf("%s is taken by another server; cannot check the tools fail without the demo", addr)
		}
	}
	cases := []struct {
		args []string
		code int
		says string
	}{
		{[]string{"token", "bob"}, 1, "no JWT secret"},
		{[]string{"verify"}, 2, "cannot reach redis at 127.0.0.1:6379"},
		{[]string{"history", "sql", "SELECT count() FROM messages"}, 2, "cannot reach clickhouse at 127.0.0.1:9000"},
	}
	for _, c := range cases {
		r := tool(c.args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		switch {
		case r.code != c.code:
			t.Errorf("%v without the demo: exit %d, want %d", c.args, r.code, c.code)
		case r.took > 10*time.Second:
			t.Errorf("%v without the demo took %v, want under 10s", c.args, r.took)
		case len(lines) != 1 || !strings.Contains(lines[0], c.says):
			t.Errorf("%v without the demo said %q, want one line with %q", c.args, r.stderr, c.says)
		}
	}
}
