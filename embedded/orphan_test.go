package embedded_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/embedded"
)

// helperEnv makes the test binary act as a parent that starts a
// redis-server, prints its pid and waits to be killed.
const helperEnv = "OFFLINEBOX_EMBEDDED_ORPHAN_HELPER"

func TestChildDiesWhenItsParentIsKilled(t *testing.T) {
	if dir := os.Getenv(helperEnv); dir != "" {
		runOrphanHelper(dir)
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux only")
	}
	needServer(t, "redis-server")
	parent := exec.Command(os.Args[0], "-test.run=^TestChildDiesWhenItsParentIsKilled$")
	parent.Env = append(os.Environ(), helperEnv+"="+t.TempDir())
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper printed no pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "pid "))
	if err != nil || !alive(pid) {
		t.Fatalf("helper line %q: pid %d not running (%v)", line, pid, err)
	}
	_ = parent.Process.Kill() // SIGKILL: the helper cannot stop its child itself
	_ = parent.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscallKill(pid)
			t.Fatalf("redis-server %d outlived its killed parent", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func runOrphanHelper(dir string) {
	p, err := embedded.StartRedis(context.Background(), embedded.RedisOptions{Dir: dir})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Printf("pid %d\n", p.Pid())
	time.Sleep(time.Minute)
	os.Exit(1)
}

// alive reports whether pid runs; a zombie waiting to be reaped is dead.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
