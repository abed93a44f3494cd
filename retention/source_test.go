package retention

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestSIGHUPReloadsThePolicyFile(t *testing.T) {
	// The test's own subscription keeps SIGHUP from ending the process
	// before Watch subscribes.
	own := make(chan os.Signal, 16)
	signal.Notify(own, syscall.SIGHUP)
	defer signal.Stop(own)
	path := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(path, []byte("defaults:\n  inbox: 30d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// A poll far longer than the test: only the signal can reload.
	go func() { defer close(done); src.Watch(ctx, time.Hour, slog.New(slog.DiscardHandler)) }()
	defer func() { cancel(); <-done }()
	if err := os.WriteFile(path, []byte("defaults:\n  inbox: 40d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); src.Current().DefaultInbox != 40*day; {
		if time.Now().After(deadline) {
			t.Fatalf("inbox %s after SIGHUP, want 40d", src.Current().DefaultInbox)
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
