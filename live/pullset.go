package live

import "sync"

// pullPasses are the conversations per connection whose catch-up after
// a resubscription found the workers' queue full, and whether a pass
// that names them to each device in one notice runs (pullSoon).
//
// mu guards toPull and pulling, and nothing else; no other lock is taken
// while it is held (the pass reads the store after releasing it).
type pullPasses struct {
	mu      sync.Mutex
	toPull  map[*liveConn]map[string]bool
	pulling bool
}

// leave leaves c's conv to the pull; start is true when no pass runs and
// the caller is to start one (it is marked running).
func (p *pullPasses) leave(c *liveConn, conv string) (start bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.toPull == nil {
		p.toPull = map[*liveConn]map[string]bool{}
	}
	if p.toPull[c] == nil {
		p.toPull[c] = map[string]bool{}
	}
	p.toPull[c][conv] = true
	if p.pulling {
		return false
	}
	p.pulling = true
	return true
}

// next is a connection left conversations to pull; nil when none is
// left or stopped says the hub stopped, and the pass ends (what is left
// is let go).
func (p *pullPasses) next(stopped func() bool) *liveConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	var next *liveConn
	for c := range p.toPull {
		next = c
		break
	}
	if next == nil || stopped() {
		p.toPull, p.pulling = nil, false
		return nil
	}
	return next
}

// take takes the conversations c is left to pull.
func (p *pullPasses) take(c *liveConn) map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	convs := p.toPull[c]
	delete(p.toPull, c)
	return convs
}
