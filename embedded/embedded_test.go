package embedded_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/embedded"
)

// needServer skips a test when the server binary is missing, or fails it
// where servers are required (make test, CI).
func needServer(t *testing.T, name string) {
	t.Helper()
	if !slices.Contains(embedded.MissingServers(), name) {
		return
	}
	if os.Getenv("OFFLINEBOX_REQUIRE_SERVERS") == "1" {
		t.Fatalf("%s is required but not installed", name)
	}
	t.Skipf("%s not installed", name)
}

// lifetime is a context that ends with the test, so every child a test
// starts is stopped even when the test fails half-way.
func lifetime(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
