//go:build !unix

package live

import (
	"net"
	"syscall"
)

// rawConnOf is nil where a write that does not wait is not built: every
// frame then goes out on a writer goroutine, under the write deadline.
func rawConnOf(net.Conn) syscall.RawConn { return nil }

// writeNoWait is never called without a raw connection; it writes
// nothing, so a caller would hand the whole batch to a writer.
func writeNoWait(syscall.RawConn, []byte) (int, error) { return 0, nil }
