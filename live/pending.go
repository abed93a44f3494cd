package live

import "sync"

// pendingSet is the hub's list of the connections with pushes not acked
// yet: its tick looks at these for pushes due again, and the pending
// gauge counts theirs. A connection is listed by its first pending push
// and unlisted once it has none (liveConn.listed says which, under the
// connection's mu).
//
// mu guards conns, and nothing else. It is the innermost lock of the live
// channel: it is taken inside a connection's mu (listPendingLocked, due,
// unregister) and no other lock is taken while it is held.
type pendingSet struct {
	mu    sync.Mutex
	conns map[*liveConn]bool
}

func newPendingSet() pendingSet { return pendingSet{conns: map[*liveConn]bool{}} }

func (p *pendingSet) add(c *liveConn) {
	p.mu.Lock()
	p.conns[c] = true
	p.mu.Unlock()
}

func (p *pendingSet) remove(c *liveConn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *pendingSet) has(c *liveConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns[c]
}

// list copies the set out: what is done with each connection (taking its
// mu) is done after mu is released.
func (p *pendingSet) list() []*liveConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	conns := make([]*liveConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	return conns
}
