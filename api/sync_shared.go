package api

import (
	"encoding/json"
	"runtime"
	"sync"
	"weak"

	"github.com/offlinebox/offlinebox/schemas"
)

// runTable keeps a value per run of entries (its first entry and its
// length) for as long as the run's first entry lives. The store hands the
// same decoded entries to every sync that shared one slice read (a
// reconnect storm: thousands of users of the same groups at once), so
// what one sync made of a run (its encodings, its zstd frame) serves them
// all. A run is looked up once, not once per entry: a weak pointer costs
// the runtime a lookup of its own.
//
// Keys are weak, so the table never keeps an entry alive: a run's value is
// dropped when its first entry is collected, and the table is bounded by
// the entries that requests in flight hold.
type runTable[V any] struct {
	mu sync.Mutex
	m  map[weak.Pointer[schemas.Sequenced]][]runValue[V]
}

// runValue is the value of the run of n entries from its key.
type runValue[V any] struct {
	n int
	v V
}

func newRunTable[V any]() runTable[V] {
	return runTable[V]{m: map[weak.Pointer[schemas.Sequenced]][]runValue[V]{}}
}

// find is the value of the run of n entries from first. When there is
// none, add (nil: none) makes one under the table's lock, which is kept
// until first is collected.
func (t *runTable[V]) find(first *schemas.Sequenced, n int, add func() V) (V, bool) {
	k := weak.Make(first) // outside the lock: it takes the runtime's own
	t.mu.Lock()
	rs, had := t.m[k]
	for _, r := range rs {
		if r.n == n {
			t.mu.Unlock()
			return r.v, true
		}
	}
	if add == nil {
		t.mu.Unlock()
		var none V
		return none, false
	}
	v := add()
	t.m[k] = append(rs, runValue[V]{n: n, v: v})
	t.mu.Unlock()
	if !had {
		runtime.AddCleanup(first, t.drop, k)
	}
	return v, true
}

func (t *runTable[V]) drop(k weak.Pointer[schemas.Sequenced]) {
	t.mu.Lock()
	delete(t.m, k)
	t.mu.Unlock()
}

// len counts the first entries the table holds runs of.
func (t *runTable[V]) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// runs counts the runs the table holds.
func (t *runTable[V]) runs() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, rs := range t.m {
		n += len(rs)
	}
	return n
}

// sharedEncodings keeps the slice-form JSON encodings of each slice read's
// entries (a run: the read's entries) while the read's first entry lives:
// encoding them was the larger part of what a sync cost the API.
type sharedEncodings struct {
	reads runTable[[]json.RawMessage]
}

func newSharedEncodings() *sharedEncodings {
	return &sharedEncodings{reads: newRunTable[[]json.RawMessage]()}
}

// get is the encodings of the read entries, if a sync made them.
func (c *sharedEncodings) get(entries []*schemas.Sequenced) ([]json.RawMessage, bool) {
	if c == nil || len(entries) == 0 {
		return nil, false
	}
	return c.reads.find(entries[0], len(entries), nil)
}

// put keeps encs as the encodings of the read entries (unless a sync kept
// some already), until its first entry is collected.
func (c *sharedEncodings) put(entries []*schemas.Sequenced, encs []json.RawMessage) {
	if c == nil || len(entries) == 0 {
		return
	}
	c.reads.find(entries[0], len(entries), func() []json.RawMessage { return encs })
}

func (c *sharedEncodings) len() int { return c.reads.len() }
