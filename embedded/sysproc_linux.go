package embedded

import "syscall"

// childSysProcAttr puts the child in its own process group (terminal signals
// reach only the parent, which stops children in order) and asks the kernel
// to kill it if the parent dies first.
//
// Pdeathsig fires when the OS thread that forked the child exits. The Go
// runtime only retires a thread when a goroutine exits while locked to it,
// which nothing in this program does, so in practice it fires when the
// parent process dies.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
