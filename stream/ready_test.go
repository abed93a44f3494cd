package stream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

func TestRunner_ReadyOnlyOnceInItsGroupAndConsumingAndNotAfterItStopped(t *testing.T) {
	_, addrs := testenv.Kafka(t, 2, "in", "dead")
	handled := make(chan struct{}, 16)
	h := HandlerFunc(func(context.Context, []*kgo.Record) ([]DeadLetter, error) {
		handled <- struct{}{}
		return nil, nil
	})
	r, err := New(testConfig(t, addrs, "ready", "in"), h)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Ready(); !errors.Is(err, ErrNotReady) {
		t.Fatalf("Ready before Run = %v, want ErrNotReady", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	eventually(t, 15*time.Second, "the runner to be ready", func() bool { return r.Ready() == nil })
	produce(t, addrs, "in", "m", 4)
	select {
	case <-handled:
	case <-time.After(10 * time.Second):
		t.Fatal("a ready runner handled nothing")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := r.Ready(); !errors.Is(err, ErrNotReady) {
		t.Errorf("Ready after Run returned = %v, want ErrNotReady", err)
	}
}
