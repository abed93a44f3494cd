package history_test

import (
	"io"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

// gate stands for a ClickHouse that is down, then up: a loopback port that
// refuses connections until open, and then forwards them to the real
// server.
type gate struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func newGate(t *testing.T, target string) *gate {
	t.Helper()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), target: target}
	t.Cleanup(g.shut)
	return g
}

// open starts forwarding.
func (g *gate) open(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", g.addr)
	if err != nil {
		t.Fatalf("open gate %s: %v", g.addr, err)
	}
	g.mu.Lock()
	g.ln = ln
	g.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go g.forward(c)
		}
	}()
}

func (g *gate) forward(c net.Conn) {
	up, err := net.Dial("tcp", g.target)
	if err != nil {
		c.Close()
		return
	}
	g.mu.Lock()
	g.conns = append(g.conns, c, up)
	g.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

// shut stops listening and cuts every forwarded connection.
func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln != nil {
		g.ln.Close()
		g.ln = nil
	}
	for _, c := range g.conns {
		c.Close()
	}
	g.conns = nil
}
