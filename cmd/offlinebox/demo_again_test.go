package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/internal/testenv"
)

// TestTheDemoRunsAgainOnItsDataAfterUsersSentMessages runs `demo --once`,
// then the serving demo on the same folder (every process it runs ready;
// users send messages in the scenario's conversations), then `demo --once`
// again: each run checks only what it sent and passes; -reset starts over.
func TestTheDemoRunsAgainOnItsDataAfterUsersSentMessages(t *testing.T) {
	testenv.RedisAddr(t) // skips, or fails under make test, without the servers installed
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	once := func(extra ...string) {
		t.Helper()
		var out bytes.Buffer
		args := append([]string{"--once", "-data", dir, "-listen", "127.0.0.1:0", "-metrics-listen", ""}, extra...)
		if err := runDemo(ctx, args, &out); err != nil {
			t.Fatalf("demo %v: %v\n%s", extra, err, out.String())
		}
		if !strings.Contains(out.String(), "502 of 502 sequenced records") {
			t.Errorf("demo %v summary:\n%s", extra, out.String())
		}
	}
	once()

	metrics := freeAddr(t)
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- runDemo(sctx, []string{"-data", dir, "-listen", "127.0.0.1:0", "-metrics-listen", metrics}, &bytes.Buffer{})
	}()
	base := waitDemoServing(t, dir, done)
	for _, url := range []string{base + "/readyz", "http://" + metrics + "/readyz"} {
		waitStatus(t, url, http.StatusOK, 30*time.Second)
	}
	secret, err := os.ReadFile(filepath.Join(dir, "jwt-secret"))
	if err != nil {
		t.Fatal(err)
	}
	kr, err := auth.New(auth.Config{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := kr.Mint("bob", "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	bob := client.New(base, tok, nil)
	for i := range 4 {
		conv, typ := "d-alice-bob", "direct"
		m := client.Outgoing{ClientMsgID: fmt.Sprintf("between-%d", i), ContentType: "text/plain", Body: []byte("hi again")}
		if i%2 == 1 {
			conv, typ = "g-product", "group"
		} else {
			m.Recipients = []string{demoUser}
		}
		m.ConvID, m.ConvType = conv, typ
		if err := bob.Send(ctx, m); err != nil {
			t.Fatalf("send between the runs: %v", err)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("serving demo: %v", err)
	}

	once()
	once("-reset")
}

// waitDemoServing waits for a serving demo's env file and returns its
// API's base URL.
func waitDemoServing(t *testing.T, dir string, done <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		raw, err := os.ReadFile(filepath.Join(dir, envFileName))
		if err == nil {
			for _, line := range strings.Split(string(raw), "\n") {
				if v, ok := strings.CutPrefix(line, envAPI+"="); ok {
					return strings.Trim(v, `"'`)
				}
			}
		}
		select {
		case err := <-done:
			t.Fatalf("demo stopped before it served: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatal("the demo did not serve in 3 minutes")
	return ""
}
