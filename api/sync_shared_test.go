package api

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/schemas"
)

// Syncs that share one slice read's decoded entries open and encode each
// entry once, and the encodings go with the read.
func TestSharedReadsAreEncodedOnceAndForgottenWithTheRead(t *testing.T) {
	shared := newSharedEncodings()
	opened := 0
	open := func(_ context.Context, m *schemas.Sequenced) (*schemas.Sequenced, error) {
		opened++
		return m, nil
	}
	read := groupEntries("g", 7, 5)
	var first []string
	for i := range 3 {
		z := newSyncSizer(context.Background(), "phone", open)
		z.shared = shared
		sizes := make([]int, len(read))
		z.Messages(read, sizes)
		for j, m := range read {
			got := string(z.message(m, sliceForm))
			if sizes[j] != len(got)+1 {
				t.Fatalf("sync %d measured entry %d as %d bytes, its encoding %s is %d", i, j, sizes[j], got, len(got))
			}
			if i == 0 {
				first = append(first, got)
			} else if got != first[j] {
				t.Fatalf("sync %d encoded entry %d as %s, want the first sync's %s", i, j, got, first[j])
			}
		}
	}
	if opened != len(read) {
		t.Fatalf("3 syncs of one shared read of %d entries opened %d, want each once", len(read), opened)
	}
	for _, other := range [][]*schemas.Sequenced{read[:3], groupEntries("g", 7, 5)} {
		if _, ok := shared.get(other); ok {
			t.Fatal("another read (shorter, or decoded again) found the shared encodings: keys must be the read itself")
		}
	}
	runtime.KeepAlive(read)
	read = nil
	deadline := time.Now().Add(5 * time.Second)
	for shared.len() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d reads' encodings still kept 5 s after their entries were dropped", shared.len())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// A body that does not open fails the answer, and its sealed encoding is
// never handed to another sync.
func TestAReadThatDidNotOpenIsNotShared(t *testing.T) {
	shared := newSharedEncodings()
	read := groupEntries("g", 1, 3)
	z := newSyncSizer(context.Background(), "phone", func(_ context.Context, m *schemas.Sequenced) (*schemas.Sequenced, error) {
		if m.Seq == 2 {
			return nil, context.DeadlineExceeded
		}
		return m, nil
	})
	z.shared = shared
	z.Messages(read, make([]int, len(read)))
	if z.err == nil {
		t.Fatal("a body that did not open left no error for the answer")
	}
	if _, ok := shared.get(read); ok {
		t.Fatal("the read with a body that did not open was shared")
	}
}

// A run of messages is found by the read it is the newest entries of,
// without an encoding per message; any other run (older entries, two
// reads joined, a message never measured) gets the same encodings the
// messages have alone, each body opened once.
func TestRunsOfMessagesGetTheEncodingsTheirReadsWereMeasuredWith(t *testing.T) {
	opened := map[*schemas.Sequenced]int{}
	open := func(_ context.Context, m *schemas.Sequenced) (*schemas.Sequenced, error) {
		opened[m]++
		return m, nil
	}
	a, b, lone := groupEntries("g", 1, 6), groupEntries("h", 1, 4), groupEntries("k", 1, 1)
	z := newSyncSizer(context.Background(), "phone", open)
	for _, read := range [][]*schemas.Sequenced{a, b} {
		z.Messages(read, make([]int, len(read)))
	}
	want := func(run []*schemas.Sequenced) []string {
		out := make([]string, len(run))
		for i, m := range run {
			out[i] = string(appendMessageJSON(nil, m, sliceForm))
		}
		return out
	}
	cases := []struct {
		name string
		run  []*schemas.Sequenced
	}{
		{"a whole read", a},
		{"the newest of a read", a[2:]},
		{"the newest of the other read", b[3:]},
		{"older entries of a read", a[1:4]},
		{"two reads joined", append(append([]*schemas.Sequenced{}, b[2:]...), a[4:]...)},
		{"a message never measured", lone},
		{"nothing", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			encs := z.runEncodings(tc.run)
			got := make([]string, len(encs))
			for i, e := range encs {
				got[i] = string(e)
			}
			if w := want(tc.run); strings.Join(got, ",") != strings.Join(w, ",") {
				t.Fatalf("run encoded as\n%v\nwant\n%v", got, w)
			}
			if s := string(z.appendMessages(nil, tc.run)); s != strings.Join(want(tc.run), ",") {
				t.Fatalf("appended as %s", s)
			}
		})
	}
	for m, n := range opened {
		if n != 1 {
			t.Fatalf("seq %d of %s opened %d times, want once", m.Seq, m.Message.ConvId, n)
		}
	}
	if len(z.msgs) != len(a)+len(b)+len(lone) {
		t.Fatalf("the per-message table holds %d encodings after lookups outside the reads' newest, want every read's and the lone one's (%d)",
			len(z.msgs), len(a)+len(b)+len(lone))
	}
}

// Measuring reads and assembling their newest entries leaves the
// per-message table empty: one table entry per message was the cost
// this design removes.
func TestMeasuringReadsKeepsNoEncodingPerMessage(t *testing.T) {
	z := newSyncSizer(context.Background(), "phone", (&Server{}).openMessage)
	a := groupEntries("g", 1, 50)
	z.Messages(a, make([]int, len(a)))
	if got := z.appendMessages(nil, a[10:]); len(got) == 0 {
		t.Fatal("no encodings")
	}
	if len(z.msgs) != 0 {
		t.Fatalf("the per-message table holds %d encodings, want none", len(z.msgs))
	}
}
