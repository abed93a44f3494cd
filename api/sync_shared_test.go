package api

import (
	"context"
	"runtime"
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
