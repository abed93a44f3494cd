package readpath

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
)

// Collapsing identical slice reads. When many users of a conversation
// sync at once (a reconnect storm after an outage), their slices of it are
// mostly the same: the same join seq, no cursor, the same limit and cap.
// Each read costs Redis a script run that copies the entries, and the API
// the transfer and the decoding of every entry; one read answers them all.
//
// A read joins one in flight only if every input that shapes its answer
// is the same: the range, the limit, the byte cut and the reader's
// membership spans as readSyncHeads saw them. The script run names the
// first reader, so the answer is bounded by the seq the heads read
// (hi ≤ that seq + 1): a reader who left since their heads were read gets
// no seq beyond the last they could read then, whoever's run answered.
// The decoded entries are shared read-only.
//
// A read also answers, for recentSliceTTL after it ended, the same read of
// a reader whose heads see the conversation as the read did: the same
// epoch, the same head of the timeline and a max seq no higher than the
// read's. Within an epoch a seq never carries another message and the
// timeline only grows at its tail (bounded by hi, part of the key) and
// loses entries at its head (which moves first), so that read is what
// Redis would answer again. The users of a storm do not arrive within
// one read's round trip of each other: without this, most of them read
// and decode the same entries again, and the encodings and compressed
// frames the API keeps by entry (api/sync_shared.go, sync_frames.go) die
// with each read.

// The recent reads kept: for how long, and at most how many and how many
// raw entry bytes (the oldest go first).
const (
	recentSliceTTL   = time.Second
	maxRecentSlices  = 4096
	maxRecentBytes   = 32 << 20
	recentSliceFixed = 256 // bytes counted per kept read beyond its entries
)

// sliceFlights are the slice reads in flight, by key, and the recent ones.
// Its in-flight size is bounded by the sync requests in flight times
// syncWave: an entry lives only while its read does.
type sliceFlights struct {
	mu sync.Mutex
	m  map[string]*sliceFlight
	// recent are the reads that ended within recentSliceTTL; order holds
	// them oldest first (a key read again is in it twice: the map says
	// which one counts).
	recent      map[string]*recentSlice
	order       []*recentSlice
	recentBytes int
}

type sliceFlight struct {
	done chan struct{}
	sl   timelineSlice
	err  error
}

type recentSlice struct {
	key   string
	sl    timelineSlice
	at    time.Time
	bytes int
}

func newSliceFlights() *sliceFlights {
	return &sliceFlights{m: map[string]*sliceFlight{}, recent: map[string]*recentSlice{}}
}

// sliceReader is whoever reads a slice, as their heads saw the
// conversation.
type sliceReader struct {
	spans        []redisstore.MemberSpan
	maxSeq       uint64
	epoch, first uint64
}

func (p convPlan) reader() sliceReader {
	return sliceReader{spans: p.spans, maxSeq: p.maxSeq, epoch: p.epoch, first: p.first}
}

// answers reports whether the recent read r answers rd at now.
func (r *recentSlice) answers(rd sliceReader, now time.Time) bool {
	return now.Sub(r.at) <= recentSliceTTL && r.sl.member && r.sl.epoch == rd.epoch && r.sl.first == rd.first &&
		r.sl.seq >= rd.maxSeq
}

// keep remembers a read that just ended, dropping the oldest past the
// bounds or the TTL. Called with mu held.
func (f *sliceFlights) keep(key string, sl timelineSlice, now time.Time) {
	r := &recentSlice{key: key, sl: sl, at: now, bytes: sl.rawBytes + recentSliceFixed}
	if old, ok := f.recent[key]; ok {
		f.recentBytes -= old.bytes
	}
	f.recent[key] = r
	f.order = append(f.order, r)
	f.recentBytes += r.bytes
	drop := 0
	for drop < len(f.order) {
		o := f.order[drop]
		if f.recent[o.key] != o {
			drop++ // replaced since: counted no more
			continue
		}
		if len(f.recent) <= maxRecentSlices && f.recentBytes <= maxRecentBytes && now.Sub(o.at) <= recentSliceTTL {
			break
		}
		delete(f.recent, o.key)
		f.recentBytes -= o.bytes
		drop++
	}
	if drop > 0 {
		f.order = append(f.order[:0], f.order[drop:]...)
	}
	if len(f.order) > 2*maxRecentSlices {
		// Keys read again and again within the TTL: drop what they replaced.
		live := f.order[:0]
		for _, o := range f.order {
			if f.recent[o.key] == o {
				live = append(live, o)
			}
		}
		clear(f.order[len(live):])
		f.order = live
	}
}

// sliceKey is everything that shapes a slice's answer for a reader whose
// spans are spans.
func sliceKey(q rangeQuery, spans []redisstore.MemberSpan) string {
	var b strings.Builder
	b.Grow(len(q.conv) + 64 + 24*len(spans))
	b.WriteString(q.conv)
	for _, n := range []uint64{q.lo, q.hi, uint64(q.limit), uint64(q.maxBytes)} {
		b.WriteByte('|')
		b.WriteString(strconv.FormatUint(n, 10))
	}
	if q.fromTop {
		b.WriteString("|t")
	}
	for _, sp := range spans {
		b.WriteByte('|')
		b.WriteString(strconv.FormatUint(sp.Joined, 10))
		b.WriteByte('-')
		b.WriteString(strconv.FormatUint(sp.Left, 10))
	}
	return b.String()
}

// readSlicesShared is readSlices for sync: qs[i] is read for readers[i],
// who may read up to its max seq. A query identical to one in flight
// waits for its answer, one identical to a recent read its heads agree
// with takes that, instead of reading again; the others are read in one
// pipeline, as readSlices does.
func (s *Reader) readSlicesShared(ctx context.Context, user string, qs []rangeQuery, readers []sliceReader) ([]timelineSlice, error) {
	out := make([]timelineSlice, len(qs))
	keys, flights, lead := s.flights.claim(qs, readers, out, time.Now())
	if len(lead) > 0 {
		sls, err := s.readSlicesOf(ctx, user, qs, lead)
		s.flights.land(keys, flights, lead, sls, err, time.Now())
		if err != nil {
			return nil, err
		}
	}
	again, err := awaitFlights(ctx, flights, out)
	if err != nil {
		return nil, err
	}
	if len(again) > 0 {
		sls, err := s.readSlicesOf(ctx, user, qs, again)
		if err != nil {
			return nil, err
		}
		for k, i := range again {
			out[i] = sls[k]
		}
	}
	for i := range out {
		// The answer is of the moment the heads were read: the max seq the
		// plan counted unread to, whoever's run read the entries.
		out[i].seq = min(out[i].seq, readers[i].maxSeq)
	}
	return out, nil
}

// claim bounds each query by its reader's max seq and finds its answer: a
// read in flight to wait for (flights[i]), a recent read that answers it
// at now (put in out[i], flights[i] nil), or none, when the query leads a
// flight of its own that others may join (its index in lead).
func (f *sliceFlights) claim(qs []rangeQuery, readers []sliceReader, out []timelineSlice, now time.Time) (keys []string, flights []*sliceFlight, lead []int) {
	keys = make([]string, len(qs))
	flights = make([]*sliceFlight, len(qs))
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range qs {
		if hi := readers[i].maxSeq + 1; qs[i].hi == 0 || qs[i].hi > hi {
			qs[i].hi = hi
		}
		keys[i] = sliceKey(qs[i], readers[i].spans)
		if fl, ok := f.m[keys[i]]; ok {
			flights[i] = fl
			continue
		}
		if r, ok := f.recent[keys[i]]; ok && r.answers(readers[i], now) {
			out[i] = r.sl
			continue
		}
		fl := &sliceFlight{done: make(chan struct{})}
		f.m[keys[i]], flights[i] = fl, fl
		lead = append(lead, i)
	}
	return keys, flights, lead
}

// land ends the flights this request led with what their read answered
// (sls[k] for lead[k], or err for all), keeping a member's answers as
// recent reads that ended at ended.
func (f *sliceFlights) land(keys []string, flights []*sliceFlight, lead []int, sls []timelineSlice, err error, ended time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, i := range lead {
		fl := flights[i]
		if err != nil {
			fl.err = err
		} else {
			fl.sl = sls[k]
			if fl.sl.member { // only a member's read answers others (answers)
				f.keep(keys[i], fl.sl, ended)
			}
		}
		delete(f.m, keys[i])
		close(fl.done)
	}
}

// awaitFlights waits for every flight and puts its answer in out. A
// flight that ended on another request's deadline or cancellation is not
// this one's failure: its index is returned, to be read alone.
func awaitFlights(ctx context.Context, flights []*sliceFlight, out []timelineSlice) (again []int, err error) {
	for i, f := range flights {
		if f == nil {
			continue
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if f.err != nil {
			if errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded) {
				again = append(again, i)
				continue
			}
			return nil, f.err
		}
		out[i] = f.sl
	}
	return again, nil
}

// readSlicesOf reads the queries of qs at the indices idx in one
// pipeline: the k-th slice answers qs[idx[k]].
func (s *Reader) readSlicesOf(ctx context.Context, user string, qs []rangeQuery, idx []int) ([]timelineSlice, error) {
	sub := make([]rangeQuery, len(idx))
	for k, i := range idx {
		sub[k] = qs[i]
	}
	return s.readSlices(ctx, user, sub)
}
