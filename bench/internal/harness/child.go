package harness

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// ServeChild serves h on ln as a server process a benchmark started:
// it prints "READY http://ADDR" for the parent to read, serves until its
// stdin ends (the parent went) or it gets SIGINT/SIGTERM, then runs
// beforeShutdown (when not nil) and shuts down within 5 s.
func ServeChild(ln net.Listener, h http.Handler, beforeShutdown func()) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	fmt.Printf("READY http://%s\n", ln.Addr())
	gone := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // EOF when the parent goes
		close(gone)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-gone:
	case <-sig:
	}
	if beforeShutdown != nil {
		beforeShutdown()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(ctx)
}
