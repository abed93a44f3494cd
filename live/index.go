package live

import (
	"sync"
)

// liveIndex finds this node's live connections: by id, by device, by user
// and by the conversations they listen to. The four maps change together
// (a connection is in all of them or in none), so one lock guards them.
//
// mu guards conns, devices, groups and byUser, and nothing else. It is
// the outermost lock of the live channel: a holder may take a
// connection's mu (liveConn.mu, to read or change its groups alongside
// groups here) and, inside that, the pending set's (pendingSet.mu); no
// holder of either of those takes mu. A holder calls no store, bus or
// socket, and sends nothing on a connection: what is looked up under it
// is copied out and acted on after it is released.
type liveIndex struct {
	mu      sync.Mutex
	conns   map[string]*liveConn          // conn id → conn
	devices map[devKey]*liveConn          // (user, device) → its connection here
	groups  map[string]map[*liveConn]bool // conversation → connections here listening to it
	byUser  map[string]map[*liveConn]bool // user → their connections here
}

type devKey struct{ user, device string }

func newLiveIndex() liveIndex {
	return liveIndex{conns: map[string]*liveConn{}, devices: map[devKey]*liveConn{},
		groups: map[string]map[*liveConn]bool{}, byUser: map[string]map[*liveConn]bool{}}
}

// add indexes c and returns the connection of its device it replaces
// here (nil: none).
func (x *liveIndex) add(c *liveConn) (old *liveConn) {
	x.mu.Lock()
	defer x.mu.Unlock()
	old = x.devices[devKey{c.user, c.device}]
	x.conns[c.id] = c
	x.devices[devKey{c.user, c.device}] = c
	if x.byUser[c.user] == nil {
		x.byUser[c.user] = map[*liveConn]bool{}
	}
	x.byUser[c.user][c] = true
	return old
}

// all are the node's connections now.
func (x *liveIndex) all() []*liveConn {
	x.mu.Lock()
	defer x.mu.Unlock()
	conns := make([]*liveConn, 0, len(x.conns))
	for _, c := range x.conns {
		conns = append(conns, c)
	}
	return conns
}

// device is the connection here of user's device (nil: none).
func (x *liveIndex) device(user, device string) *liveConn {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.devices[devKey{user, device}]
}

// userConns are user's connections here that keep selects (it is called
// under mu: it reads only what the connection holds in atomics).
func (x *liveIndex) userConns(user string, keep func(*liveConn) bool) []*liveConn {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []*liveConn
	for c := range x.byUser[user] {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

// listeners are the connections here listening to conv.
func (x *liveIndex) listeners(conv string) []*liveConn {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]*liveConn, 0, len(x.groups[conv]))
	for c := range x.groups[conv] {
		out = append(out, c)
	}
	return out
}

// heard: a connection here listens to conv.
func (x *liveIndex) heard(conv string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.groups[conv]) > 0
}

// targets are the envelope's connections here, with each one's Joined
// when joined is asked for; gone counts the targets whose connection is
// gone or was replaced.
func (x *liveIndex) targets(e *Envelope, withJoined bool) (conns []*liveConn, joined []uint64, gone int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	conns = make([]*liveConn, 0, len(e.Targets))
	if withJoined {
		joined = make([]uint64, 0, len(e.Targets))
	}
	for _, t := range e.Targets {
		c := x.conns[t.Conn]
		if c == nil || c.user != t.User || c.device != t.Device {
			gone++
			continue
		}
		conns = append(conns, c)
		if withJoined {
			joined = append(joined, t.Joined)
		}
	}
	return conns, joined, gone
}

// remove takes c out of the index and out of pend, and returns the
// conversations it was the last listener here of (their channels are to
// be dropped). It takes c.mu inside mu, and pend's lock inside that.
func (x *liveIndex) remove(c *liveConn, pend *pendingSet) (drop []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.conns, c.id)
	if set := x.byUser[c.user]; set != nil {
		if delete(set, c); len(set) == 0 {
			delete(x.byUser, c.user)
		}
	}
	if x.devices[devKey{c.user, c.device}] == c {
		delete(x.devices, devKey{c.user, c.device})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for g := range c.groups {
		if set := x.groups[g]; set != nil {
			delete(set, c)
			if len(set) == 0 {
				delete(x.groups, g)
				drop = append(drop, g)
			}
		}
	}
	if c.listed {
		c.listed = false
		pend.remove(c)
	}
	return drop
}
