package history

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/schemas"
)

func TestChunkBoundsRowsAndBytesAndAlwaysTakesOne(t *testing.T) {
	tests := []struct {
		name          string
		rows, bytes   int
		sizes         []int
		wantChunkLens []int
	}{
		{"fits in one", 10, 1000, []int{10, 10, 10}, []int{3}},
		{"row bound", 2, 1000, []int{1, 1, 1, 1, 1}, []int{2, 2, 1}},
		{"byte bound", 100, 25, []int{10, 10, 10, 10}, []int{2, 2}},
		{"exactly the byte bound", 100, 20, []int{10, 10, 10}, []int{2, 1}},
		{"one record above the byte bound goes alone", 100, 25, []int{5, 40, 5}, []int{1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &Handler{cfg: Config{MaxBatchRows: tt.rows, MaxBatchBytes: tt.bytes}}
			var got []int
			for sizes := tt.sizes; len(sizes) > 0; {
				n := h.chunk(sizes)
				got = append(got, n)
				sizes = sizes[n:]
			}
			if !slices.Equal(got, tt.wantChunkLens) {
				t.Fatalf("chunks = %v, want %v", got, tt.wantChunkLens)
			}
		})
	}
}

func TestConfigValidateNamesTheBadField(t *testing.T) {
	tests := []struct {
		cfg   Config
		field string
	}{
		{Config{MaxBatchRows: -1}, "MaxBatchRows"},
		{Config{MaxBatchBytes: -1}, "MaxBatchBytes"},
		{Config{InsertTimeout: -time.Second}, "InsertTimeout"},
	}
	for _, tt := range tests {
		if err := tt.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", tt.cfg, err, tt.field)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if _, err := New(Config{}, nil); err == nil {
		t.Errorf("New with a nil store succeeded")
	}
}

// noStore fails the test if the handler inserts at all.
type noStore struct{ t *testing.T }

func (s noStore) InsertBatch(context.Context, []*schemas.Sequenced) error {
	s.t.Fatalf("InsertBatch called for a batch without storable records")
	return nil
}

func TestHandleWithOnlyDeadLettersInsertsNothing(t *testing.T) {
	h, err := New(Config{}, noStore{t})
	if err != nil {
		t.Fatal(err)
	}
	garbage := &kgo.Record{Topic: schemas.TopicSequenced, Value: []byte("not protobuf \xff\xff")}
	dead, err := h.Handle(context.Background(), []*kgo.Record{garbage})
	if err != nil || len(dead) != 1 || dead[0].Record != garbage {
		t.Fatalf("Handle(garbage) = %v, %v; want it dead-lettered", dead, err)
	}
}
