package api

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/schemas"
)

// Syncs that share decoded entries (one slice read answered them all)
// open and encode each entry once, and the encoding goes with the entry.
func TestSharedEntriesAreEncodedOnceAndForgottenWithTheEntry(t *testing.T) {
	shared := newSharedEncodings()
	opened := 0
	open := func(_ context.Context, m *schemas.Sequenced) (*schemas.Sequenced, error) {
		opened++
		return m, nil
	}
	entry := &schemas.Sequenced{Seq: 7, Epoch: 1, Message: &schemas.Message{ConvId: "g", ContentType: "text/plain", Body: []byte("hello")}}
	var first string
	for i := range 3 {
		z := newSyncSizer(context.Background(), "phone", open)
		z.shared = shared
		got := string(z.message(entry, sliceForm))
		if i == 0 {
			first = got
		} else if got != first {
			t.Fatalf("sync %d encoded %s, want the first sync's %s", i, got, first)
		}
	}
	if opened != 1 {
		t.Fatalf("3 syncs of one shared entry opened it %d times, want once", opened)
	}
	if other := (&schemas.Sequenced{Seq: 7, Epoch: 1, Message: entry.Message}); func() bool {
		_, ok := shared.get(other)
		return ok
	}() {
		t.Fatal("another decoded entry of the same seq found the shared encoding: keys must be the entry itself")
	}
	runtime.KeepAlive(entry)
	entry = nil
	deadline := time.Now().Add(5 * time.Second)
	for shared.len() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d encodings still kept 5 s after their entry was dropped", shared.len())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
