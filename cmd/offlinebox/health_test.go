package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitStatus polls url until it answers code, and returns the body.
func waitStatus(t *testing.T, url string, code int, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, body := get(t, url, "")
		if got == code {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d %.300s, want %d within %s", url, got, body, code, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestEveryProcessOfThePipelineIsReadyOnceItsStoresAnswerAndItsGroupsConsume(t *testing.T) {
	metrics := freeAddr(t)
	base, _ := startPipelineWith(t, func(c *stackConfig) { c.MetricsListen = metrics })
	for _, url := range []string{base + "/readyz", "http://" + metrics + "/readyz"} {
		if body := waitStatus(t, url, http.StatusOK, 30*time.Second); !strings.Contains(body, `"ready"`) {
			t.Errorf("GET %s: %s", url, body)
		}
	}
	for _, url := range []string{base + "/healthz", "http://" + metrics + "/healthz"} {
		if code, body := get(t, url, ""); code != http.StatusOK {
			t.Errorf("GET %s: %d %s", url, code, body)
		}
	}
}

func TestAWorkerWaitingForAStoreServesMetricsAndHealthButIsNotReady(t *testing.T) {
	metrics := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runConvindex(ctx, []string{"-redis", freeAddr(t), "-kafka", freeAddr(t), "-metrics-listen", metrics,
			"-log-level", "error"}, io.Discard)
	}()
	defer func() {
		cancel()
		<-done
	}()
	waitStatus(t, "http://"+metrics+"/healthz", http.StatusOK, 10*time.Second)
	if body := waitStatus(t, "http://"+metrics+"/readyz", http.StatusServiceUnavailable, time.Second); !strings.Contains(body, "waiting for the stores") {
		t.Errorf("/readyz while waiting: %s", body)
	}
	if code, _ := get(t, "http://"+metrics+"/metrics", ""); code != http.StatusOK {
		t.Errorf("/metrics while waiting: %d", code)
	}
}

func TestWaitingForAStoreLogsEveryAttemptWithItsBackoff(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	down := errors.New("connection refused")
	attempts := 0
	err := waitFor(ctx, &stackConfig{}, "redis", "127.0.0.1:1", "redis", func(context.Context) error {
		attempts++
		return down
	})
	if err == nil {
		t.Fatal("waitFor succeeded against a store that is down")
	}
	lines := strings.Count(buf.String(), `msg="waiting for a store"`)
	if attempts < 3 || lines != attempts-1 && lines != attempts {
		t.Errorf("%d attempts, %d log lines, want one per failed attempt:\n%s", attempts, lines, buf.String())
	}
	if strings.Count(buf.String(), "backoff=") != lines {
		t.Errorf("not every line names its backoff:\n%s", buf.String())
	}
}
