package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/auth"
)

// node is the node binary, or a skip when there is none (make test
// installs it, so there it always runs).
func node(t *testing.T) string {
	p, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH (scripts/ensure-packages.sh nodejs)")
	}
	return p
}

// TestNodeClientSendsCatchesUpAcksAndGoesLiveAgainstTheRealAPI runs
// clients/js's node tests against the whole pipeline: the module the page
// serves speaks to the API and the live channel as documented.
func TestNodeClientSendsCatchesUpAcksAndGoesLiveAgainstTheRealAPI(t *testing.T) {
	exe := node(t)
	base, cfg := startPipeline(t)
	kr, err := auth.New(auth.Config{Secret: []byte(cfg.JWTSecret)})
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "OFFLINEBOX_URL="+base)
	for _, d := range []struct{ name, user, device string }{
		{"ALICE", "alice", "node-a"}, {"BOB", "bob", "node-b"}, {"BOB_LIVE", "bob", "node-b-live"},
	} {
		tok, err := kr.Mint(d.user, d.device, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, "OFFLINEBOX_TOKEN_"+d.name+"="+tok)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"--test", "--test-reporter=tap", filepath.Join("..", "..", "clients", "js", "client.test.js")}
	// Node 20 and 21 have the WebSocket client behind a flag; later ones by default.
	if out, err := exec.CommandContext(ctx, exe, "-p", "typeof WebSocket").Output(); err == nil && strings.TrimSpace(string(out)) != "function" {
		args = append([]string{"--experimental-websocket"}, args...)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if s := string(out); !strings.Contains(s, "# fail 0") || strings.Contains(s, "# skipped ") && !strings.Contains(s, "# skipped 0") {
		t.Fatalf("node's tests did not all run and pass:\n%s", s)
	}
	t.Logf("%s", out)
}
