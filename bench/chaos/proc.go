package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// buildBinary builds ./cmd/offlinebox into dir once; the fanout workers of
// the fault scenarios are real processes of it, so that kill -9 is a real
// crash.
func buildBinary(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "offlinebox")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/offlinebox")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/offlinebox: %w\n%s", err, out)
	}
	return bin, nil
}

// moduleRoot finds the folder holding go.mod, from the working directory
// up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// worker is one `offlinebox fanout` child process. Its stderr (the
// process's logs) goes to a file the log test reads.
type worker struct {
	name    string
	bin     string
	args    []string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
}

func newWorker(bin, name, logDir string, args ...string) *worker {
	return &worker{name: name, bin: bin, args: args, logPath: filepath.Join(logDir, name+".log")}
}

// start launches the process (again). It dies with this program
// (Pdeathsig) and gets no terminal signals (own process group).
func (w *worker) start() error {
	if w.running() {
		return nil
	}
	out, err := os.OpenFile(w.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: log file: %w", w.name, err)
	}
	cmd := exec.Command(w.bin, w.args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("start %s: %w", w.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(done)
	}()
	w.cmd, w.done = cmd, done
	return nil
}

func (w *worker) running() bool {
	if w.done == nil {
		return false
	}
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

// kill ends the process with SIGKILL, as a crash does, and reaps it.
func (w *worker) kill() {
	w.signal(syscall.SIGKILL, 0)
}

// stop ends the process with SIGTERM (it drains and commits) and kills it
// if it has not exited within grace.
func (w *worker) stop(grace time.Duration) {
	w.signal(syscall.SIGTERM, grace)
}

func (w *worker) signal(sig syscall.Signal, grace time.Duration) {
	if !w.running() {
		return
	}
	_ = syscall.Kill(w.cmd.Process.Pid, sig)
	select {
	case <-w.done:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(w.cmd.Process.Pid, syscall.SIGKILL)
	<-w.done
}
