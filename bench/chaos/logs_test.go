package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/bench/checker"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

// syncBuffer is a log sink safe for the stages' goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLogsHoldNoMessageBodyAndNoToken plays a workload (messages sent
// through Kafka and the API, resends, read receipts, bad requests carrying
// bodies and tokens) with every in-process stage and the API logging at
// debug level, and the fanout process logging as it does in production;
// no body and no token may appear in any of those logs.
func TestLogsHoldNoMessageBodyAndNoToken(t *testing.T) {
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := startTestEnv(t, logger)
	w := playSmall(t, e, 23)
	tok, err := e.token(w.Devices[0].User, w.Devices[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	// Refused requests log their errors: they carry a body and a token too.
	badBody := []byte(`{"client_msg_id":"x:y","conv_id":"c","conv_type":"group","body":"` + b64(checker.BodyMarker+"refused") + `"}`)
	for _, token := range []string{tok, tok + "tampered"} {
		if status, _, _ := do(t, "POST", e.apiURL+"/v1/messages", token, badBody); status < 400 {
			t.Fatalf("a bad message was accepted: %d", status)
		}
	}
	e.stop() // flush the fanout process's log
	all := logs.String() + readLogs(t, e.dir)
	if !strings.Contains(all, "api request") || !strings.Contains(all, "worker started") {
		t.Fatalf("the logs were not captured:\n%s", clipS(all))
	}
	if i := strings.Index(all, checker.BodyMarker); i >= 0 {
		t.Errorf("a message body is in the logs: %s", clipS(all[max(0, i-200):]))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, tok := range e.minted {
		// The signature is the secret part; a token's claims alone are
		// not enough to use it.
		sig := tok[strings.LastIndex(tok, ".")+1:]
		if strings.Contains(all, sig) {
			t.Errorf("a bearer token is in the logs")
		}
	}
}

func readLogs(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no process logs in %s (%v)", dir, err)
	}
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

func clipS(s string) string { return clip([]byte(s)) }

// TestServersRefuseToStartWithoutASecretAndListenOnLoopback runs the
// binary as an operator would: the API and `all` need a JWT secret, and
// every address a process listens on defaults to 127.0.0.1.
func TestServersRefuseToStartWithoutASecretAndListenOnLoopback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := harness.BuildBinary(ctx, root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for _, sub := range []string{"api", "all"} {
		cmd := exec.CommandContext(ctx, bin, sub, "-kafka", "127.0.0.1:1", "-redis", "127.0.0.1:1")
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "jwt-secret") {
			t.Errorf("%s started without a secret or did not say why: %v\n%s", sub, err, out)
		}
	}
	found := 0
	for _, sub := range []string{"api", "fanout", "convindex", "history", "expiry", "all"} {
		cmd := exec.CommandContext(ctx, bin, sub, "-h")
		cmd.Env = env
		out, _ := cmd.CombinedOutput()
		for _, flag := range []string{"-listen", "-metrics-listen"} {
			def := flagDefault(string(out), flag)
			if def != "" {
				found++
			}
			if def != "" && !strings.HasPrefix(def, "127.0.0.1:") {
				t.Errorf("%s %s defaults to %q, not loopback", sub, flag, def)
			}
		}
	}
	if found < 6 {
		t.Errorf("only %d listen defaults found in the help texts", found)
	}
}

// flagDefault finds `(default "X")` in the help text of flag.
func flagDefault(help, flag string) string {
	i := strings.Index(help, "  "+flag+" ")
	if i < 0 {
		return ""
	}
	rest := help[i+len(flag)+2:]
	if k := strings.Index(rest, "\n  -"); k >= 0 {
		rest = rest[:k]
	}
	j := strings.Index(rest, `(default "`)
	if j < 0 {
		return ""
	}
	rest = rest[j+len(`(default "`):]
	return rest[:strings.Index(rest, `"`)]
}
