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

// proc is one child process of the cluster: a production binary, the
// broker process, the balancer. Its output goes to a log file in the run's
// folder.
type proc struct {
	kind    string
	name    string
	bin     string
	args    []string
	env     []string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
}

func newProc(kind, name, logDir, bin string, args ...string) *proc {
	return &proc{kind: kind, name: name, bin: bin, args: args, logPath: filepath.Join(logDir, name+".log")}
}

// start launches the process (again). It dies with this program
// (Pdeathsig) and gets no terminal signals (own process group).
func (p *proc) start() error {
	if p.running() {
		return nil
	}
	out, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: log file: %w", p.name, err)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), p.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

func (p *proc) running() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *proc) pid() int {
	if !p.running() {
		return 0
	}
	return p.cmd.Process.Pid
}

// kill ends the process with SIGKILL, as a crash does, and reaps it.
func (p *proc) kill() { p.signal(syscall.SIGKILL, 0) }

// stop ends the process with SIGTERM and kills it if it has not exited
// within grace.
func (p *proc) stop(grace time.Duration) { p.signal(syscall.SIGTERM, grace) }

func (p *proc) signal(sig syscall.Signal, grace time.Duration) {
	if !p.running() {
		return
	}
	_ = syscall.Kill(p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// buildBinary builds ./cmd/offlinebox into dir: every process of the
// cluster runs that production binary.
func buildBinary(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "offlinebox")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/offlinebox")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
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
