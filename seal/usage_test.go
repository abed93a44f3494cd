package seal

import (
	"context"
	"fmt"
	"testing"
)

func TestUsageCountsTheDataKeysEachMasterKeyWrapsInBothStores(t *testing.T) {
	m1, _ := GenerateMasterKey("m1")
	m2, _ := GenerateMasterKey("m2")
	r := ring(t, m1, m2)
	reg := newMemStore()
	reg.keys = map[string]string{"a": "m1:AAAA", "b": "m2:AAAA", "c": "m2:AAAA", "d": "gone:AAAA", "e": "garbage"}
	durable := durableKeys{"a": "m1:AAAA", "b": "m2:AAAA"}
	uses, err := Usage(context.Background(), r, r.IDs(), reg, durable)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(uses)
	want := fmt.Sprint([]KeyUse{
		{ID: "m1", InRing: true, Stored: 1, Durable: 1},
		{ID: "m2", InRing: true, Newest: true, Stored: 2, Durable: 1},
		{ID: "(unreadable)", Stored: 1},
		{ID: "gone", Stored: 1},
	})
	if got != want {
		t.Errorf("Usage = %s\nwant    %s", got, want)
	}
}

// durableKeys is a durable copy of wrapped data keys in memory.
type durableKeys map[string]string

func (d durableKeys) EachDataKey(_ context.Context, fn func(conv, wrapped string) error) error {
	for conv, w := range d {
		if err := fn(conv, w); err != nil {
			return err
		}
	}
	return nil
}

func (d durableKeys) PutDataKey(_ context.Context, conv, wrapped string) error {
	d[conv] = wrapped
	return nil
}
