package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrStopped is returned by Restart once the context the process was started
// with has ended: a process never outlives it.
var ErrStopped = errors.New("embedded: process context ended")

// Process is one server child. Its ports and folder stay the same across
// Stop and Restart, so clients can reconnect to the same address and find
// the same data.
type Process struct {
	name      string
	bin       string
	args      []string
	dir       string
	addr      string
	httpAddr  string
	logs      []string // files whose tail explains a failed start
	ready     func(ctx context.Context) error
	startWait time.Duration
	stopGrace time.Duration
	life      context.Context

	mu  sync.Mutex // serialises start, stop, kill and restart
	run *childRun  // nil while stopped
}

// childRun is one execution of the child binary.
type childRun struct {
	cmd  *exec.Cmd
	out  *os.File
	done chan struct{} // closed when the child has exited and was reaped
	err  error         // exit status, valid after done is closed
}

// Addr is the host:port clients connect to (the native port for ClickHouse).
func (p *Process) Addr() string { return p.addr }

// HTTPAddr is the host:port of the HTTP interface, empty for servers that
// have none.
func (p *Process) HTTPAddr() string { return p.httpAddr }

// Dir is the folder holding the process's data and logs.
func (p *Process) Dir() string { return p.dir }

// Pid is the process id of the running child, 0 while stopped.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.run == nil || p.run.exited() {
		return 0
	}
	return p.run.cmd.Process.Pid
}

// Stop ends the child with SIGTERM and waits for it to exit; when ctx ends
// first (or after the process's grace period when ctx has no deadline) the
// child is killed. Stopping a stopped process does nothing.
func (p *Process) Stop(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopLocked(ctx)
}

// Kill ends the child with SIGKILL, as a crash would, and waits until it is
// gone. Killing a stopped process does nothing.
func (p *Process) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.run
	if r == nil {
		return nil
	}
	p.run = nil
	r.signal(syscall.SIGKILL)
	<-r.done
	return nil
}

// Restart stops the child if it runs, starts it again with the same ports
// and data, and waits until it answers.
func (p *Process) Restart(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.stopLocked(ctx); err != nil {
		return err
	}
	if p.life.Err() != nil {
		return fmt.Errorf("restart %s: %w", p.name, ErrStopped)
	}
	return p.startLocked(ctx)
}

func (p *Process) stopLocked(ctx context.Context) error {
	r := p.run
	if r == nil {
		return nil
	}
	p.run = nil
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.stopGrace)
		defer cancel()
	}
	r.signal(syscall.SIGTERM)
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
	}
	r.signal(syscall.SIGKILL)
	<-r.done
	return nil
}

// start launches the child for the first time and ties it to p.life.
func (p *Process) start(ctx context.Context) error {
	p.mu.Lock()
	err := p.startLocked(ctx)
	p.mu.Unlock()
	if err != nil {
		return err
	}
	context.AfterFunc(p.life, func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), p.stopGrace)
		defer cancel()
		_ = p.Stop(stopCtx)
	})
	return nil
}

func (p *Process) startLocked(ctx context.Context) error {
	out, err := os.OpenFile(filepath.Join(p.dir, p.name+".out.log"),
		os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start %s: open log: %w", p.name, err)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Dir = p.dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = childSysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	r := &childRun{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		_ = out.Close()
		close(r.done)
	}()
	p.run = r
	if err := p.waitReady(ctx, r); err != nil {
		p.run = nil
		r.signal(syscall.SIGKILL)
		<-r.done
		return fmt.Errorf("start %s on %s: %w%s", p.name, p.addr, err, p.logTail())
	}
	return nil
}

// waitReady polls the ready check until it passes, the child exits, or the
// start deadline passes.
func (p *Process) waitReady(ctx context.Context, r *childRun) error {
	ctx, cancel := context.WithTimeout(ctx, p.startWait)
	defer cancel()
	var last error
	for {
		select {
		case <-r.done:
			return fmt.Errorf("exited during start (%v)", r.err)
		default:
		}
		tryCtx, tryCancel := context.WithTimeout(ctx, 2*time.Second)
		last = p.ready(tryCtx)
		tryCancel()
		if last == nil {
			return nil
		}
		select {
		case <-r.done:
			return fmt.Errorf("exited during start (%v)", r.err)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s: %w", p.startWait, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logTail returns the end of the child's logs, to explain a failed start.
func (p *Process) logTail() string {
	var b strings.Builder
	for _, name := range append([]string{filepath.Join(p.dir, p.name+".out.log")}, p.logs...) {
		tail := readTail(name, 1500)
		if tail != "" {
			fmt.Fprintf(&b, "\n--- %s (end) ---\n%s", name, tail)
		}
	}
	return b.String()
}

func readTail(name string, n int64) string {
	f, err := os.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	return strings.TrimSpace(string(data))
}

func (r *childRun) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the child's whole process group, so helpers a server
// may fork go with it.
func (r *childRun) signal(sig syscall.Signal) {
	if r.exited() {
		return
	}
	pid := r.cmd.Process.Pid
	if err := syscall.Kill(-pid, sig); err != nil {
		_ = r.cmd.Process.Signal(sig)
	}
}
