package live

import "sync"

// passGate lets one pass run at a time, and one more after it when it is
// asked for while a pass runs (relistSoon).
//
// mu guards running and again, and nothing else; no other lock is taken
// while it is held (the pass runs with it released).
type passGate struct {
	mu      sync.Mutex
	running bool
	again   bool
}

// ask asks for a pass; start is true when none runs and the caller is to
// run one (it is marked running), false when the running one is asked
// for another.
func (g *passGate) ask() (start bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running {
		g.again = true
		return false
	}
	g.running = true
	return true
}

// passed ends a pass; it reports whether another is to run (one was
// asked for meanwhile and stopped says the hub runs still).
func (g *passGate) passed(stopped func() bool) (again bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.again || stopped() {
		g.running = false
		return false
	}
	g.again = false
	return true
}
