package readpath

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
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
	annSpans := []redisstore.MemberSpan{{Joined: 1}}
	q := rangeQuery{conv: "g", lo: 1, limit: 200, fromTop: true}
	read := func(user string, spans []redisstore.MemberSpan, maxSeq uint64) <-chan []timelineSlice {
		out := make(chan []timelineSlice, 1)
		go func() {
			sls, err := s.readSlicesShared(ctx, user, []rangeQuery{q}, []sliceReader{{spans: spans, maxSeq: maxSeq}})
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
	other := <-read("cid", []redisstore.MemberSpan{{Joined: 1, Left: 2}, {Joined: 1}}, 10)
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

// A read that ended answers the same read again for a while, but only a
// reader whose heads see the conversation as it did: the same epoch and
// timeline head, no newer max seq. Anything else reads Redis again.
func TestARecentSliceReadAnswersOnlyReadersWhoseHeadsAgree(t *testing.T) {
	ctx := context.Background()
	s := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	rs.group("g", "bob", "ann") // seq 1
	for i := range 5 {
		rs.say("g", group, "bob", "", fmt.Sprintf("message %d", i)) // seqs 2..6
	}
	spans := []redisstore.MemberSpan{{Joined: 1}}
	q := rangeQuery{conv: "g", lo: 1, limit: 200, fromTop: true}
	fresh, err := s.readSlices(ctx, "ann", []rangeQuery{q})
	if err != nil {
		t.Fatal(err)
	}
	heads := sliceReader{spans: spans, maxSeq: fresh[0].seq, epoch: fresh[0].epoch, first: fresh[0].first}
	read := func(rd sliceReader) timelineSlice {
		t.Helper()
		sls, err := s.readSlicesShared(ctx, "ann", []rangeQuery{q}, []sliceReader{rd})
		if err != nil {
			t.Fatal(err)
		}
		return sls[0]
	}
	first := read(heads)
	if fmt.Sprint(seqsOf(first.entries)) != "[2 3 4 5 6]" {
		t.Fatalf("the first read got seqs %v, want 2..6", seqsOf(first.entries))
	}
	sameRead := func(sl timelineSlice) bool { return len(sl.entries) > 0 && sl.entries[0] == first.entries[0] }
	if again := read(heads); !sameRead(again) || fmt.Sprint(seqsOf(again.entries)) != "[2 3 4 5 6]" {
		t.Fatalf("the same read with the same heads got seqs %v from another read; want the recent one's", seqsOf(again.entries))
	}
	otherEpoch, otherHead := heads, heads
	otherEpoch.epoch++
	otherHead.first++
	for name, rd := range map[string]sliceReader{"another epoch": otherEpoch, "another timeline head": otherHead} {
		if sl := read(rd); sameRead(sl) {
			t.Fatalf("%s: answered by the recent read", name)
		}
	}
	rs.say("g", group, "bob", "", "message 5") // seq 7
	newer := heads
	newer.maxSeq = 7
	if sl := read(newer); sameRead(sl) || fmt.Sprint(seqsOf(sl.entries)) != "[2 3 4 5 6 7]" {
		t.Fatalf("heads that saw seq 7 got seqs %v, want a read of 2..7", seqsOf(sl.entries))
	}
}

// The recent reads stay within their count, their bytes and their TTL.
func TestTheRecentSliceReadsStayWithinTheirBounds(t *testing.T) {
	f := newSliceFlights()
	now := time.Unix(1_700_000_000, 0)
	for i := range maxRecentSlices + 10 {
		f.keep(fmt.Sprint("k", i), timelineSlice{member: true}, now)
	}
	if len(f.recent) != maxRecentSlices {
		t.Fatalf("%d reads kept, want the newest %d", len(f.recent), maxRecentSlices)
	}
	if _, ok := f.recent["k0"]; ok {
		t.Fatal("the oldest read is still kept past the count")
	}
	for i := range 5 {
		f.keep(fmt.Sprint("big", i), timelineSlice{member: true, rawBytes: maxRecentBytes / 3}, now)
	}
	if f.recentBytes > maxRecentBytes {
		t.Fatalf("%d bytes kept, more than %d", f.recentBytes, maxRecentBytes)
	}
	f.keep("late", timelineSlice{member: true}, now.Add(recentSliceTTL+time.Millisecond))
	if len(f.recent) != 1 || len(f.order) != 1 || f.recentBytes != recentSliceFixed {
		t.Fatalf("after the TTL %d reads (%d in order, %d bytes) kept, want the one just read", len(f.recent), len(f.order), f.recentBytes)
	}
}

// The same key read again and again keeps one read, and the order of reads
// stays bounded.
func TestAKeyReadAgainAndAgainKeepsOneRecentRead(t *testing.T) {
	f := newSliceFlights()
	now := time.Unix(1_700_000_000, 0)
	for range 3*maxRecentSlices + 1 {
		f.keep("k", timelineSlice{member: true, rawBytes: 10}, now)
	}
	if len(f.recent) != 1 || len(f.order) > 2*maxRecentSlices || f.recentBytes != 10+recentSliceFixed {
		t.Fatalf("%d reads kept, %d in order, %d bytes; want one read of %d bytes", len(f.recent), len(f.order), f.recentBytes, 10+recentSliceFixed)
	}
}
