//go:build unix && !linux

package embedded

import "syscall"

// childSysProcAttr puts the child in its own process group. Without
// Pdeathsig outside Linux, children rely on the parent's context to stop.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
