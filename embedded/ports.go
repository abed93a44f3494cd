package embedded

import (
	"context"
	"fmt"
	"net"
	"os"
)

// Loopback is the only address children listen on.
const Loopback = "127.0.0.1"

// startAttempts bounds retries of a start whose ports were picked for the
// caller: another program may take a free port between our pick and the
// child's bind.
const startAttempts = 3

// FreePorts returns n distinct loopback ports that were free a moment ago.
// All listeners are held until every port is picked, so the n ports differ.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", net.JoinHostPort(Loopback, "0"))
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// fillPorts replaces every zero port with a free one and reports whether it
// picked any.
func fillPorts(ports ...*int) (bool, error) {
	var zero []*int
	for _, p := range ports {
		if *p == 0 {
			zero = append(zero, p)
		}
	}
	if len(zero) == 0 {
		return false, nil
	}
	free, err := FreePorts(len(zero))
	if err != nil {
		return false, err
	}
	for i, p := range zero {
		*p = free[i]
	}
	return true, nil
}

// startPicking starts the process build returns, build filling in its
// ports (picked: some were chosen here); a start that fails with picked
// ports is tried again with new ones, up to startAttempts.
func startPicking(ctx context.Context, build func() (p *Process, picked bool, err error)) (*Process, error) {
	for attempt := 1; ; attempt++ {
		p, picked, err := build()
		if err != nil {
			return nil, err
		}
		err = p.start(ctx)
		if err == nil {
			return p, nil
		}
		if !picked || attempt == startAttempts || ctx.Err() != nil {
			return nil, err
		}
	}
}

func hostPort(port int) string {
	return net.JoinHostPort(Loopback, fmt.Sprint(port))
}

// makeDir creates dir (and parents) for a child's data.
func makeDir(dir string) error {
	if dir == "" {
		return fmt.Errorf("embedded: Dir is required")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}
