package api

import (
	"encoding/json"
	"runtime"
	"sync"
	"weak"

	"github.com/offlinebox/offlinebox/schemas"
)

// sharedEncodings keeps each message's JSON encoding for as long as its
// decoded entry lives. The store hands the same decoded entries to every
// sync that shared one slice read (a reconnect storm: thousands of users
// of the same groups at once), and encoding them was then the larger part
// of what a sync cost the API: one encoding serves them all.
//
// Keys are weak, so the table never keeps an entry alive: an encoding is
// dropped when its entry is collected, and the table is bounded by the
// entries that requests in flight hold.
type sharedEncodings struct {
	mu sync.Mutex
	m  map[weak.Pointer[schemas.Sequenced]]json.RawMessage
}

func newSharedEncodings() *sharedEncodings {
	return &sharedEncodings{m: map[weak.Pointer[schemas.Sequenced]]json.RawMessage{}}
}

func (c *sharedEncodings) get(m *schemas.Sequenced) (json.RawMessage, bool) {
	if c == nil {
		return nil, false
	}
	k := weak.Make(m) // outside the lock: it takes the runtime's own
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[k]
	return b, ok
}

// put keeps b as m's encoding, until m is collected.
func (c *sharedEncodings) put(m *schemas.Sequenced, b json.RawMessage) {
	if c == nil {
		return
	}
	k := weak.Make(m)
	c.mu.Lock()
	_, had := c.m[k]
	if !had {
		c.m[k] = b
	}
	c.mu.Unlock()
	if !had {
		runtime.AddCleanup(m, c.drop, k)
	}
}

func (c *sharedEncodings) drop(k weak.Pointer[schemas.Sequenced]) {
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}

func (c *sharedEncodings) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
