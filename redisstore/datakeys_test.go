package redisstore

import (
	"context"
	"testing"
)

func TestDataKeyIsSetOnceAndRewrappedOnlyFromWhatWasRead(t *testing.T) {
	s, ctx := seqTestStore(t, 100), context.Background()
	steps := []struct {
		name string
		do   func() (string, error)
		want string
	}{
		{"the first writer stores its key", func() (string, error) { return s.PutDataKey(ctx, "c", "m1:a") }, "m1:a"},
		{"a second writer gets the first key", func() (string, error) { return s.PutDataKey(ctx, "c", "m1:b") }, "m1:a"},
		{"a rewrap from a stale read changes nothing", func() (string, error) {
			if ok, err := s.SwapDataKey(ctx, "c", "m1:b", "m2:x"); ok || err != nil {
				t.Fatalf("stale swap: %v %v", ok, err)
			}
			return s.DataKey(ctx, "c")
		}, "m1:a"},
		{"a rewrap from what was read replaces it", func() (string, error) {
			if ok, err := s.SwapDataKey(ctx, "c", "m1:a", "m2:a"); !ok || err != nil {
				t.Fatalf("swap: %v %v", ok, err)
			}
			return s.DataKey(ctx, "c")
		}, "m2:a"},
	}
	for _, st := range steps {
		got, err := st.do()
		if err != nil || got != st.want {
			t.Fatalf("%s: %q, %v; want %q", st.name, got, err, st.want)
		}
	}
	var seen []string
	if err := s.EachDataKey(ctx, func(conv, w string) error { seen = append(seen, conv+"="+w); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != "c=m2:a" {
		t.Fatalf("EachDataKey saw %v", seen)
	}
}
