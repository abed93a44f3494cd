package redisstore

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Slice reads of sync that are the same in every input (range, limit, cut
// and the reader's spans) wait for the one in flight rather than read
// again; a reader whose spans differ reads for itself, and every answer
// stops at the seq the reader's heads saw.
func TestSyncSliceReadsJoinOnlyAReadInFlightWithTheSameInputs(t *testing.T) {
	ctx := context.Background()
	s := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	rs.group("g", "bob", "ann", "cid") // seq 1
	for i := range 9 {
		rs.say("g", group, "bob", "", fmt.Sprintf("message %d", i)) // seqs 2..10
	}
	annSpans := []MemberSpan{{Joined: 1}}
	q := rangeQuery{conv: "g", lo: 1, limit: 200, fromTop: true}
	read := func(user string, spans []MemberSpan, maxSeq uint64) <-chan []timelineSlice {
		out := make(chan []timelineSlice, 1)
		go func() {
			sls, err := s.readSlicesShared(ctx, user, []rangeQuery{q}, [][]MemberSpan{spans}, []uint64{maxSeq})
			if err != nil {
				t.Error(err)
			}
			out <- sls
		}()
		return out
	}

	// A read in flight with ann's inputs, which Redis could not have
	// answered: epoch 777.
	inFlight := q
	inFlight.hi = 11
	f := &sliceFlight{done: make(chan struct{}), sl: timelineSlice{member: true, seq: 10, epoch: 777}}
	s.flights.m[sliceKey(inFlight, annSpans)] = f

	// cid's spans as its heads saw them differ (a rejoin since, say).
	other := <-read("cid", []MemberSpan{{Joined: 1, Left: 2}, {Joined: 1}}, 10)
	if len(other) != 1 || other[0].epoch == 777 || fmt.Sprint(seqsOf(other[0].entries)) != "[2 3 4 5 6 7 8 9 10]" {
		t.Fatalf("a reader with other spans got %+v, want its own read of seqs 2..10", other)
	}
	joined := read("ann", annSpans, 10)
	select {
	case sls := <-joined:
		t.Fatalf("the same read answered %+v before the one in flight did", sls)
	case <-time.After(50 * time.Millisecond):
	}
	close(f.done)
	if sls := <-joined; len(sls) != 1 || sls[0].epoch != 777 {
		t.Fatalf("the same read got %+v, want the answer of the one in flight", sls)
	}
	delete(s.flights.m, sliceKey(inFlight, annSpans))

	bounded := <-read("ann", annSpans, 6)
	if len(bounded) != 1 || bounded[0].seq != 6 || fmt.Sprint(seqsOf(bounded[0].entries)) != "[2 3 4 5 6]" {
		t.Fatalf("a reader whose heads saw seq 6 got max seq %d and seqs %v, want 6 and 2..6",
			bounded[0].seq, seqsOf(bounded[0].entries))
	}
	if len(s.flights.m) != 0 {
		t.Fatalf("%d reads left in flight after every read ended", len(s.flights.m))
	}
}
