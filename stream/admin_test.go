package stream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

func TestEnsureTopics_CreatesMissingAndKeepsExisting(t *testing.T) {
	_, addrs := testenv.Kafka(t, 3, "existing")
	tests := []struct {
		name       string
		partitions int32
		topics     []string
		wantErr    error
		want       map[string]int // topic -> partitions afterwards
	}{
		{"creates a missing topic", 4, []string{"fresh"}, nil, map[string]int{"fresh": 4}},
		{"keeps an existing topic as it is", 8, []string{"existing", "other"}, nil, map[string]int{"existing": 3, "other": 8}},
		{"is repeatable", 4, []string{"fresh"}, nil, map[string]int{"fresh": 4}},
		{"rejects zero partitions", 0, []string{"never"}, ErrInvalidConfig, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := EnsureTopics(ctx, addrs, tt.partitions, tt.topics...)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("EnsureTopics = %v, want %v", err, tt.wantErr)
			}
			// A fresh client per look: franz-go serves repeated metadata
			// requests of one client from a cache for a few seconds.
			details, err := admin(t, addrs).ListTopics(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for topic, parts := range tt.want {
				if got := len(details[topic].Partitions); got != parts {
					t.Errorf("topic %s has %d partitions, want %d", topic, got, parts)
				}
			}
			if tt.wantErr != nil && details.Has("never") {
				t.Error("a rejected call created a topic")
			}
		})
	}
}

func TestNewProducer_ProduceSyncIsAcknowledged(t *testing.T) {
	_, addrs := testenv.Kafka(t, 1, "out")
	cl, err := NewProducer(addrs)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := cl.ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("v")}).First()
	if err != nil {
		t.Fatalf("ProduceSync: %v", err)
	}
	if res.Offset != 0 || res.ProducerID < 0 {
		t.Errorf("produced at offset %d with producer id %d, want offset 0 from an idempotent producer", res.Offset, res.ProducerID)
	}
	if _, err := NewProducer(nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewProducer(nil) = %v, want ErrInvalidConfig", err)
	}
}
