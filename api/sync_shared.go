package api

import (
	"encoding/json"
	"runtime"
	"sync"
	"weak"

	"github.com/offlinebox/offlinebox/schemas"
)

// sharedEncodings keeps the slice-form JSON encodings of each slice read's
// entries for as long as the read's first entry lives. The store hands
// the same decoded entries to every sync that shared one slice read (a
// reconnect storm: thousands of users of the same groups at once), and
// encoding them was then the larger part of what a sync cost the API: one
// encoding serves them all. A read is looked up once, not once per entry:
// a weak pointer costs the runtime a lookup of its own.
//
// Keys are weak, so the table never keeps an entry alive: a read's
// encodings are dropped when its first entry is collected, and the table
// is bounded by the entries that requests in flight hold.
type sharedEncodings struct {
	mu sync.Mutex
	m  map[weak.Pointer[schemas.Sequenced]][]readEncodings
}

// readEncodings are the encodings of the n entries of one read.
type readEncodings struct {
	n    int
	encs []json.RawMessage
}

func newSharedEncodings() *sharedEncodings {
	return &sharedEncodings{m: map[weak.Pointer[schemas.Sequenced]][]readEncodings{}}
}

// get is the encodings of the read entries, if a sync made them.
func (c *sharedEncodings) get(entries []*schemas.Sequenced) ([]json.RawMessage, bool) {
	if c == nil || len(entries) == 0 {
		return nil, false
	}
	k := weak.Make(entries[0]) // outside the lock: it takes the runtime's own
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.m[k] {
		if r.n == len(entries) {
			return r.encs, true
		}
	}
	return nil, false
}

// put keeps encs as the encodings of the read entries, until its first
// entry is collected.
func (c *sharedEncodings) put(entries []*schemas.Sequenced, encs []json.RawMessage) {
	if c == nil || len(entries) == 0 {
		return
	}
	k := weak.Make(entries[0])
	c.mu.Lock()
	rs, had := c.m[k]
	for _, r := range rs {
		if r.n == len(entries) {
			c.mu.Unlock()
			return
		}
	}
	c.m[k] = append(rs, readEncodings{n: len(entries), encs: encs})
	c.mu.Unlock()
	if !had {
		runtime.AddCleanup(entries[0], c.drop, k)
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
