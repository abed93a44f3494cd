package redisstore

// bounded is a map of at most maxEntries values whose weights (entries a
// value holds: members, say) sum to at most maxWeight; past either bound,
// values chosen at random make room. At random, not least recently used:
// the caches of this package are read by every sync and sequencing call,
// and a read that changes nothing needs no order kept; what a storm keeps
// asking for comes back at once. Not safe for concurrent use: its owner's
// mutex guards it (with what else the owner keeps beside it).
type bounded[V any] struct {
	m                     map[string]weighted[V]
	weight                int
	maxEntries, maxWeight int // maxWeight 0: entries only
}

type weighted[V any] struct {
	v V
	w int
}

func newBounded[V any](maxEntries, maxWeight int) bounded[V] {
	return bounded[V]{m: map[string]weighted[V]{}, maxEntries: maxEntries, maxWeight: maxWeight}
}

func (b *bounded[V]) get(k string) (V, bool) {
	e, ok := b.m[k]
	return e.v, ok
}

// put keeps v, of weight w, as k's value; a value heavier than the whole
// bound is not kept (k then has none).
func (b *bounded[V]) put(k string, v V, w int) {
	b.remove(k)
	if b.maxWeight > 0 && w > b.maxWeight {
		return
	}
	for len(b.m) > 0 && (len(b.m) >= b.maxEntries || b.maxWeight > 0 && b.weight+w > b.maxWeight) {
		for victim := range b.m { // a map's iteration starts anywhere
			b.remove(victim)
			break
		}
	}
	b.m[k] = weighted[V]{v: v, w: w}
	b.weight += w
}

func (b *bounded[V]) remove(k string) {
	if e, ok := b.m[k]; ok {
		b.weight -= e.w
		delete(b.m, k)
	}
}

// Bounded is the bounded map for the stages built on the store (the read
// path's member and notice copies, redisstore/readpath), so that every
// cache of the store makes room the same way. Not safe for concurrent
// use, as bounded.
type Bounded[V any] struct{ b bounded[V] }

// NewBounded: see bounded (maxWeight 0: entries only).
func NewBounded[V any](maxEntries, maxWeight int) *Bounded[V] {
	return &Bounded[V]{b: newBounded[V](maxEntries, maxWeight)}
}

// Get returns k's value.
func (b *Bounded[V]) Get(k string) (V, bool) { return b.b.get(k) }

// Put keeps v, of weight w, as k's value (not kept when heavier than the
// whole bound).
func (b *Bounded[V]) Put(k string, v V, w int) { b.b.put(k, v, w) }

// Remove forgets k's value.
func (b *Bounded[V]) Remove(k string) { b.b.remove(k) }

// Weight is the sum of the kept values' weights.
func (b *Bounded[V]) Weight() int { return b.b.weight }
