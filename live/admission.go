package live

import (
	"net"
	"sync"
)

// Reasons a live connection is refused (the label of
// offlinebox_live_refused_total; api/asyncapi.yaml names the answer of each).
const (
	RefusedNodeFull     = "node_full"    // the node's MaxConnections, before the upgrade: 503 live_full
	RefusedAddressFull  = "address_full" // MaxUnauthenticatedPerAddr, before the upgrade: 429 too_many_unauthenticated
	RefusedUserFull     = "user_full"    // MaxPerUser: 429 too_many_connections, or close 4010 after an auth frame
	RefusedDevicesFull  = "devices_full" // MaxDevices, on every node together: close 4011
	RefusedUnauthorized = "unauthorized" // no valid token (401, or close 4004)
	RefusedRevoked      = "revoked"      // a token issued before its user's or device's revocation (401, or close 4013)
	RefusedStoreDown    = "store_down"   // the live bus cannot subscribe, or the revocations cannot be read: 503 unavailable
)

// liveAdmission counts this node's live connections in one place, from the
// upgrade to the end of the connection, however it authenticated: a
// connection takes a ticket before it is upgraded (the node's bound counts
// it from then on, authenticated or not; one still waiting for its auth
// frame counts against its remote address too), and binds it to its user
// and device once it knows them (the user's bound). Each step is decided
// under one lock, so concurrent connections get exactly the bounds.
type liveAdmission struct {
	maxTotal, maxPerUser, maxPerAddr int

	// mu guards every count below.
	mu      sync.Mutex
	total   int                     // tickets held
	waiting map[string]int          // remote address → tickets not bound yet
	users   map[string]*userTickets // user → their bound tickets
}

// userTickets are one user's bound tickets on this node.
type userTickets struct {
	tickets int
	devices map[string]int // device → tickets (a newer connection of a device replaces the older)
}

// liveTicket is one connection's place in the node's bounds.
type liveTicket struct {
	a            *liveAdmission
	addr         string
	user, device string // set once bound
	bound, done  bool   // guarded by a.mu
}

func newLiveAdmission(cfg Config) *liveAdmission {
	return &liveAdmission{maxTotal: cfg.MaxConnections, maxPerUser: cfg.MaxPerUser, maxPerAddr: cfg.MaxUnauthenticatedPerAddr,
		waiting: map[string]int{}, users: map[string]*userTickets{}}
}

// remoteHost is the address part of r.RemoteAddr.
func remoteHost(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}

// enter takes a ticket for a connection about to be upgraded from addr, or
// names why not (RefusedNodeFull, RefusedAddressFull); with user set (the
// token came with the upgrade) the ticket is bound at once (bind).
func (a *liveAdmission) enter(addr, user, device string) (*liveTicket, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.total >= a.maxTotal:
		return nil, RefusedNodeFull
	case user == "" && a.waiting[addr] >= a.maxPerAddr:
		return nil, RefusedAddressFull
	}
	t := &liveTicket{a: a, addr: addr}
	if user != "" {
		t.bound = true // never waited
		if reason := a.bindLocked(t, user, device); reason != "" {
			return nil, reason
		}
		a.total++
		return t, ""
	}
	a.total++
	a.waiting[addr]++
	return t, ""
}

// bind gives the ticket to user's device, or names why not
// (RefusedUserFull): the user holds MaxPerUser devices here already, or
// twice as many connections (replacements of one device under way). A
// connection of a device the user holds here already takes no more room:
// it replaces the older one.
func (t *liveTicket) bind(user, device string) string {
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	return t.a.bindLocked(t, user, device)
}

// bindLocked is bind; a.mu is held.
func (a *liveAdmission) bindLocked(t *liveTicket, user, device string) string {
	u := a.users[user]
	if u == nil {
		u = &userTickets{devices: map[string]int{}}
	}
	if (u.devices[device] == 0 && len(u.devices) >= a.maxPerUser) || u.tickets >= 2*a.maxPerUser {
		return RefusedUserFull
	}
	a.users[user] = u
	u.tickets++
	u.devices[device]++
	a.unwaitLocked(t)
	t.user, t.device, t.bound = user, device, true
	return ""
}

// unwaitLocked takes t off its address's waiting count. a.mu is held.
func (a *liveAdmission) unwaitLocked(t *liveTicket) {
	if t.bound {
		return
	}
	if a.waiting[t.addr]--; a.waiting[t.addr] <= 0 {
		delete(a.waiting, t.addr)
	}
}

// release gives the ticket back (once; later calls do nothing).
func (t *liveTicket) release() {
	a := t.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.done {
		return
	}
	t.done = true
	a.total--
	a.unwaitLocked(t)
	if !t.bound {
		return
	}
	u := a.users[t.user]
	u.tickets--
	if u.devices[t.device]--; u.devices[t.device] <= 0 {
		delete(u.devices, t.device)
	}
	if u.tickets <= 0 {
		delete(a.users, t.user)
	}
}

// counts are the tickets held and the waiting ones (tests, metrics).
func (a *liveAdmission) counts() (total, waiting int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, n := range a.waiting {
		waiting += n
	}
	return a.total, waiting
}
