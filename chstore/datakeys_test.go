package chstore_test

import (
	"testing"
	"time"
)

// The wrapped data keys sealed records carry are kept per conversation,
// the newest in force: a rekey's row replaces the records' one, and a
// record without a key leaves it alone.
func TestDataKeysOfSealedRecordsAreKeptAndARekeyReplacesThem(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	base := time.Now().Add(-time.Hour)
	a := fixture("dk-a", 1, 3, writtenAt(base))
	for _, m := range a {
		m.DataKey = "m1:aaaa"
	}
	b := fixture("dk-b", 1, 2, writtenAt(base))
	b[1].DataKey = "m1:bbbb"
	clear := fixture("dk-c", 1, 2, writtenAt(base))
	if err := s.InsertBatch(ctx, append(append(a, b...), clear...)); err != nil {
		t.Fatal(err)
	}
	for conv, want := range map[string]string{"dk-a": "m1:aaaa", "dk-b": "m1:bbbb", "dk-c": ""} {
		if got, err := s.DataKey(ctx, conv); err != nil || got != want {
			t.Errorf("data key of %s: %q (%v), want %q", conv, got, err, want)
		}
	}
	if err := s.PutDataKey(ctx, "dk-a", "m2:cccc"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.DataKey(ctx, "dk-a"); got != "m2:cccc" {
		t.Errorf("after the rekey dk-a's key is %q", got)
	}
	all := map[string]string{}
	if err := s.EachDataKey(ctx, func(conv, w string) error { all[conv] = w; return nil }); err != nil {
		t.Fatal(err)
	}
	if all["dk-a"] != "m2:cccc" || all["dk-b"] != "m1:bbbb" || len(all) != 2 {
		t.Errorf("listed %v", all)
	}
}
