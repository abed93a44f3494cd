package harness

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// childTestEnv makes this test binary, run again, the child under test.
const childTestEnv = "OFFLINEBOX_HARNESS_CHILD_TEST"

// TestMain lets the binary serve as the child: with childTestEnv set it
// answers "pong" through ServeChild, writing the value of childTestEnv to
// the file named by it once asked to stop, and exits.
func TestMain(m *testing.M) {
	if path := os.Getenv(childTestEnv); path != "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			os.Exit(3)
		}
		h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "pong") })
		if err := ServeChild(ln, h, func() { _ = os.WriteFile(path, []byte("stopped"), 0o600) }); err != nil {
			os.Exit(4)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestAStartedChildServesAtItsReadyURLAndStopsWhenAsked(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	marker := t.TempDir() + "/stopped"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := StartChild(ctx, "the test child", exe, []string{childTestEnv + "=" + marker})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(c.URL)
	if err != nil {
		c.Stop()
		t.Fatalf("GET the READY URL %s: %v", c.URL, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "pong" {
		c.Stop()
		t.Fatalf("child answered %q, want pong", body)
	}
	if cpu, err := c.CPU(); err != nil || cpu < 0 {
		t.Errorf("child CPU = %v, %v", cpu, err)
	}
	c.Stop()
	if data, err := os.ReadFile(marker); err != nil || string(data) != "stopped" {
		t.Fatalf("the child did not shut down through ServeChild: %q, %v", data, err)
	}
	if _, err := ProcessCPU(c.Pid); err == nil {
		t.Errorf("process %d still readable after Stop", c.Pid)
	}
}

func TestAChildThatExitsBeforeReadyIsAnErrorNotAHang(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := StartChild(ctx, "false", "/bin/false", nil)
	if err == nil || !strings.Contains(err.Error(), "false ended before it was ready: exit status 1") {
		t.Fatalf("StartChild of a program that exits at once = %v, want it said to have ended with its status", err)
	}
}
