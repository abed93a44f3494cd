package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
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

// sliceFlights are the slice reads in flight, by key. Its size is bounded
// by the sync requests in flight times syncWave: an entry lives only while
// its read does.
type sliceFlights struct {
	mu sync.Mutex
	m  map[string]*sliceFlight
}

type sliceFlight struct {
	done chan struct{}
	sl   timelineSlice
	err  error
}

func newSliceFlights() *sliceFlights { return &sliceFlights{m: map[string]*sliceFlight{}} }

// sliceKey is everything that shapes a slice's answer for a reader whose
// spans are spans.
func sliceKey(q rangeQuery, spans []MemberSpan) string {
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

// readSlicesShared is readSlices for sync: qs[i] is read for a reader whose
// spans are spans[i] and who may read up to maxSeqs[i] (the heads' seq).
// A query identical to one in flight waits for its answer instead of
// reading again; the others are read in one pipeline, as readSlices does.
func (s *Store) readSlicesShared(ctx context.Context, user string, qs []rangeQuery, spans [][]MemberSpan, maxSeqs []uint64) ([]timelineSlice, error) {
	out := make([]timelineSlice, len(qs))
	keys := make([]string, len(qs))
	flights := make([]*sliceFlight, len(qs))
	var lead []int
	s.flights.mu.Lock()
	for i := range qs {
		if hi := maxSeqs[i] + 1; qs[i].hi == 0 || qs[i].hi > hi {
			qs[i].hi = hi
		}
		keys[i] = sliceKey(qs[i], spans[i])
		if f, ok := s.flights.m[keys[i]]; ok {
			flights[i] = f
			continue
		}
		f := &sliceFlight{done: make(chan struct{})}
		s.flights.m[keys[i]], flights[i] = f, f
		lead = append(lead, i)
	}
	s.flights.mu.Unlock()
	if len(lead) > 0 {
		lq := make([]rangeQuery, len(lead))
		for k, i := range lead {
			lq[k] = qs[i]
		}
		sls, err := s.readSlices(ctx, user, lq)
		s.flights.mu.Lock()
		for k, i := range lead {
			f := flights[i]
			if err != nil {
				f.err = err
			} else {
				f.sl = sls[k]
			}
			delete(s.flights.m, keys[i])
			close(f.done)
		}
		s.flights.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	var again []int
	for i, f := range flights {
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if f.err != nil {
			// Another request's deadline or cancellation is not this
			// one's: read alone.
			if errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded) {
				again = append(again, i)
				continue
			}
			return nil, f.err
		}
		out[i] = f.sl
	}
	if len(again) > 0 {
		aq := make([]rangeQuery, len(again))
		for k, i := range again {
			aq[k] = qs[i]
		}
		sls, err := s.readSlices(ctx, user, aq)
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
		out[i].seq = min(out[i].seq, maxSeqs[i])
	}
	return out, nil
}
