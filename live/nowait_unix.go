//go:build unix

package live

import (
	"net"
	"syscall"
)

// rawConnOf is conn's file descriptor access, for writes that do not
// wait (nil when conn has none).
func rawConnOf(conn net.Conn) syscall.RawConn {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// writeNoWait writes what the socket takes at once, in one syscall: n is
// 0, with no error, when it takes nothing now.
func writeNoWait(raw syscall.RawConn, buf []byte) (int, error) {
	var n int
	var werr error
	if err := raw.Write(func(fd uintptr) bool {
		n, werr = syscall.Write(int(fd), buf)
		return true // never wait for the socket to take more
	}); err != nil {
		return 0, err
	}
	if werr == syscall.EAGAIN || werr == syscall.EINTR {
		return 0, nil
	}
	return max(n, 0), werr
}
