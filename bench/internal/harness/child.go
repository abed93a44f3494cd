package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Child is a server process a benchmark started (ServeChild runs in it),
// as the parent sees it: its CPU and memory are measured apart from the
// clients that load it.
type Child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser // held open: the child stops when it closes
	URL   string
	Pid   int
}

// childStartWait bounds the wait for a child's READY line; childStopWait
// the wait for it to finish once asked, after which it is killed.
const (
	childStartWait = 30 * time.Second
	childStopWait  = 15 * time.Second
)

// StartChild runs exe with env added to this process's environment and
// its stderr on ours, and waits for the READY line ServeChild prints;
// name says which server in errors. A child that does not get ready
// within 30 s, or before ctx ends, is stopped; one that closes its stdout
// first (it ended) is an error at once.
func StartChild(ctx context.Context, name, exe string, env []string) (*Child, error) {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &Child{cmd: cmd, stdin: stdin, Pid: cmd.Process.Pid}
	ready, ended := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				select {
				case ready <- u:
				default:
				}
			}
		}
	}()
	select {
	case c.URL = <-ready:
		return c, nil
	case <-ended:
		c.Stop()
		return nil, fmt.Errorf("%s ended before it was ready: %s", name, c.cmd.ProcessState)
	case <-time.After(childStartWait):
		c.Stop()
		return nil, fmt.Errorf("%s did not start within %s", name, childStartWait)
	case <-ctx.Done():
		c.Stop()
		return nil, ctx.Err()
	}
}

// Stop asks the child to finish (it closes its stdin and interrupts it:
// ServeChild shuts down on either, and a child not serving yet ends on
// the signal) and waits; one that does not end within 15 s is killed.
func (c *Child) Stop() {
	_ = c.stdin.Close()
	_ = c.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(childStopWait):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// CPU is the user+system CPU the child used so far.
func (c *Child) CPU() (time.Duration, error) { return ProcessCPU(c.Pid) }

// ProcessCPU is the user+system CPU a process of this machine used so far.
func ProcessCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("CPU of process %d: %w", pid, err)
	}
	st := string(data)
	fields := strings.Fields(st[strings.LastIndexByte(st, ')')+2:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("CPU of process %d: short /proc/%d/stat", pid, pid)
	}
	user, _ := strconv.ParseInt(fields[11], 10, 64)
	sys, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(user+sys) * (time.Second / 100), nil // USER_HZ
}

// ProcessRSS is a process's resident memory in bytes, 0 when it cannot
// be read.
func ProcessRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// ServeChild serves h on ln as a server process a benchmark started:
// it prints "READY http://ADDR" for the parent to read, serves until its
// stdin ends (the parent went) or it gets SIGINT/SIGTERM, then runs
// beforeShutdown (when not nil) and shuts down within 5 s.
func ServeChild(ln net.Listener, h http.Handler, beforeShutdown func()) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	// The signals are caught before READY is said: a parent that stops
	// the child as soon as it read the line would otherwise kill it.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { _ = hs.Serve(ln) }()
	fmt.Printf("READY http://%s\n", ln.Addr())
	gone := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // EOF when the parent goes
		close(gone)
	}()
	select {
	case <-gone:
	case <-sig:
	}
	if beforeShutdown != nil {
		beforeShutdown()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(ctx)
}
