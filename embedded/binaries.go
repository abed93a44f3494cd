package embedded

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ErrNotInstalled reports a server binary that is not on this machine.
var ErrNotInstalled = errors.New("not installed")

// systemDirs are searched after PATH: Debian installs clickhouse-server in
// /usr/sbin, which is not on the PATH of every user.
func systemDirs() []string {
	return []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"}
}

// findBinary returns explicit when set, else name from PATH or the system
// folders.
func findBinary(explicit, name string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if path, err := exec.LookPath(name); err == nil {
		return path, nil
	}
	for _, dir := range systemDirs() {
		path := filepath.Join(dir, name)
		if st, err := os.Stat(path); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return path, nil
		}
	}
	return "", fmt.Errorf("%s: %w (install the Debian packages redis-server, clickhouse-server and clickhouse-client)", name, ErrNotInstalled)
}
