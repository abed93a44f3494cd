package harness

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

// Proc is a child process a benchmark starts, kills and starts again (a
// production binary, a broker, a balancer): the fault suites crash it for
// real. Its output goes to a log file the benchmark may read.
type Proc struct {
	Name    string
	LogPath string
	// Env is added to this process's environment when it starts.
	Env  []string
	bin  string
	args []string
	cmd  *exec.Cmd
	done chan struct{} // closed once the started process was reaped
}

// NewProc is a process named name running bin with args, its output in
// logDir/name.log; it does not start it.
func NewProc(name, logDir, bin string, args ...string) *Proc {
	return &Proc{Name: name, LogPath: filepath.Join(logDir, name+".log"), bin: bin, args: args}
}

// Start launches the process (again). It dies with this program
// (Pdeathsig) and gets no terminal signals (own process group).
func (p *Proc) Start() error {
	if p.Running() {
		return nil
	}
	out, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: log file: %w", p.Name, err)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
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

// Running reports that the process was started and has not ended.
func (p *Proc) Running() bool {
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

// Pid is the running process's id, 0 when it does not run.
func (p *Proc) Pid() int {
	if !p.Running() {
		return 0
	}
	return p.cmd.Process.Pid
}

// Kill ends the process with SIGKILL, as a crash does, and reaps it.
func (p *Proc) Kill() { p.signal(syscall.SIGKILL, 0) }

// Stop ends the process with SIGTERM (a server drains and commits) and
// kills it if it has not exited within grace.
func (p *Proc) Stop(grace time.Duration) { p.signal(syscall.SIGTERM, grace) }

func (p *Proc) signal(sig syscall.Signal, grace time.Duration) {
	if !p.Running() {
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

// BuildBinary builds ./cmd/offlinebox of the module at root into dir, so
// that the processes a fault suite kills are the production binary.
func BuildBinary(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "offlinebox")
	if err := GoBuild(ctx, root, "./cmd/offlinebox", bin); err != nil {
		return "", err
	}
	return bin, nil
}

// GoBuild builds the package pkg of the module at root into the file
// out; a failed build's error carries the compiler's output.
func GoBuild(ctx context.Context, root, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, output)
	}
	return nil
}

// ModuleRoot finds the folder holding go.mod, from the working directory
// up.
func ModuleRoot() (string, error) {
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
