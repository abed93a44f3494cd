package live

import (
	"container/heap"
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/redisstore"
)

// A live connection lasts as long as its token: it is closed
// (CloseTokenExpired) at the token's exp plus the keyring's leeway, unless
// a reauth frame brought a fresh token of the same user and device first,
// which moves its end to that token's. The hub's ticker looks at the
// earliest end only (a heap), so a tick with nothing due costs nothing per
// connection.

// reauthedFrame answers a reauth frame that was accepted.
type reauthedFrame struct {
	Type      string `json:"type"` // reauthed
	ExpiresMS int64  `json:"expires_ms"`
}

// tokenEnd is when a connection authenticated by id is closed, unix ms.
func (h *liveHub) tokenEnd(id auth.Identity) int64 {
	return id.Expires.Add(h.deps.Leeway).UnixMilli()
}

// tokenDeadlines are the connections' ends, earliest first. An entry
// whose connection's end moved since (a reauth pushed another) is skipped
// when it comes due; the heap is rebuilt from the connections when such
// entries make it twice their number.
type tokenDeadlines struct {
	// mu guards h; it is taken alone (the hub's tick closes the
	// connections it took off h after releasing it).
	mu sync.Mutex
	h  deadlineHeap
}

type deadline struct {
	at int64 // unix ms
	c  *liveConn
}

type deadlineHeap []deadline

func (d deadlineHeap) Len() int           { return len(d) }
func (d deadlineHeap) Less(i, j int) bool { return d[i].at < d[j].at }
func (d deadlineHeap) Swap(i, j int)      { d[i], d[j] = d[j], d[i] }
func (d *deadlineHeap) Push(x any)        { *d = append(*d, x.(deadline)) }
func (d *deadlineHeap) Pop() any {
	old := *d
	x := old[len(old)-1]
	old[len(old)-1] = deadline{}
	*d = old[:len(old)-1]
	return x
}

// add sets c's end to at and schedules it.
func (t *tokenDeadlines) add(c *liveConn, at int64) {
	c.tokenEnd.Store(at)
	t.mu.Lock()
	heap.Push(&t.h, deadline{at: at, c: c})
	t.mu.Unlock()
}

// due takes the connections whose end is at or before now.
func (t *tokenDeadlines) due(now int64) []*liveConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*liveConn
	for len(t.h) > 0 && t.h[0].at <= now {
		d := heap.Pop(&t.h).(deadline)
		if d.c.tokenEnd.Load() == d.at { // else a reauth moved it
			out = append(out, d.c)
		}
	}
	return out
}

// compact rebuilds the heap from conns when stale entries (ended
// connections, ends moved by reauths) make it more than twice their
// number.
func (t *tokenDeadlines) compact(conns []*liveConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.h) <= 2*len(conns)+1024 {
		return
	}
	h := make(deadlineHeap, 0, len(conns))
	for _, c := range conns {
		if at := c.tokenEnd.Load(); at > 0 {
			h = append(h, deadline{at: at, c: c})
		}
	}
	heap.Init(&h)
	t.h = h
}

// expireTokens closes the connections whose token ran out.
func (h *liveHub) expireTokens(now time.Time) {
	for _, c := range h.deadlines.due(now.UnixMilli()) {
		if c.close(CloseTokenExpired, "the token expired; reconnect with a fresh one, or send reauth before it expires") {
			h.metrics.tokenCloses.WithLabelValues("expired").Inc()
		}
	}
}

// reauth answers a reauth frame: a fresh token of the connection's user
// and device moves the connection's end to that token's.
func (h *liveHub) reauth(ctx context.Context, c *liveConn, tok string) error {
	id, err := h.deps.Tokens.Verify(ctx, tok)
	if err == nil && id.Device == "" {
		err = h.deps.Tokens.DeviceRevoked(ctx, id, c.device)
	}
	if err != nil {
		h.metrics.reauths.WithLabelValues("refused").Inc()
		return &edge.Error{Status: http.StatusUnauthorized, Code: "unauthorized", Field: "token", Msg: "is not a valid token"}
	}
	if dev, err := edge.DeviceOf(id, c.device, "device_id", true); err != nil || id.User != c.user || dev != c.device {
		h.metrics.reauths.WithLabelValues("refused").Inc()
		return edge.Forbidden("the token is not for user %q, device %q", c.user, c.device)
	}
	end := h.tokenEnd(id)
	c.tokenIssued.Store(id.Issued.UnixMilli())
	h.deadlines.add(c, end)
	h.metrics.reauths.WithLabelValues("accepted").Inc()
	c.send(jsonFrame(reauthedFrame{Type: "reauthed", ExpiresMS: end}), false)
	return nil
}

// closeRevoked closes the connections here that a revocation covers: the
// user's (of its device, unless it covers every device) whose token was
// issued before it. A connection reauthed with a later token stays.
func (h *liveHub) closeRevoked(e redisstore.RevocationEntry) {
	var rec redisstore.Revocation
	rec.Merge(e.Device, e.At)
	hit := h.index.userConns(e.User, func(c *liveConn) bool {
		return rec.Covers(c.device, time.UnixMilli(c.tokenIssued.Load()))
	})
	for _, c := range hit {
		if c.close(CloseRevoked, "this user or device was revoked; sign in again") {
			h.metrics.tokenCloses.WithLabelValues("revoked").Inc()
		}
	}
}
