package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDelay_GrowsExponentiallyWithinBounds(t *testing.T) {
	const lo, hi = 100 * time.Millisecond, 2 * time.Second
	tests := []struct {
		name    string
		attempt int
		jitter  float64
		want    time.Duration
	}{
		{"first retry without jitter is half of RetryMin", 1, 0, lo / 2},
		{"first retry with full jitter approaches RetryMin", 1, 0.999999, lo - 1},
		{"third retry doubles twice", 3, 0, 2 * lo},
		{"late retries are capped at RetryMax", 30, 0, hi / 2},
		{"very late retries do not overflow", 1000, 0.5, hi * 3 / 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Policy{Min: lo, Max: hi}.Delay(tt.attempt, tt.jitter)
			if tt.jitter > 0.99 {
				if got < tt.want-time.Microsecond || got >= lo {
					t.Fatalf("Delay(%d, jitter %v) = %v, want just below %v", tt.attempt, tt.jitter, got, lo)
				}
				return
			}
			if got != tt.want {
				t.Fatalf("Delay(%d, jitter %v) = %v, want %v", tt.attempt, tt.jitter, got, tt.want)
			}
		})
	}
}

func TestDelay_NeverExceedsRetryMax(t *testing.T) {
	const lo, hi = 30 * time.Millisecond, 500 * time.Millisecond
	for attempt := 1; attempt < 100; attempt++ {
		for _, j := range []float64{0, 0.3, 0.999} {
			if d := (Policy{Min: lo, Max: hi}).Delay(attempt, j); d > hi || d < lo/2 {
				t.Fatalf("attempt %d jitter %v: %v outside [%v, %v]", attempt, j, d, lo/2, hi)
			}
		}
	}
}

func TestRetry_StopsAtTheFirstSuccess(t *testing.T) {
	calls := 0
	err := Retry(context.Background(), Policy{Min: time.Millisecond, Max: time.Millisecond}, func(context.Context) error {
		if calls++; calls < 3 {
			return errors.New("down")
		}
		return nil
	}, nil)
	if err != nil || calls != 3 {
		t.Fatalf("Retry = %v after %d calls, want nil after 3", err, calls)
	}
}

func TestRetry_GivesUpWhenCtxEndsWithTheLastError(t *testing.T) {
	down := errors.New("connection refused")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	retried := 0
	err := Retry(ctx, Policy{Min: 5 * time.Millisecond, Max: 10 * time.Millisecond},
		func(context.Context) error { return down }, func(int, error) { retried++ })
	if !errors.Is(err, down) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Retry = %v, want the last error and the deadline", err)
	}
	if retried == 0 {
		t.Fatal("onRetry was never called")
	}
}

func TestWait_EndsEarlyWhenStopped(t *testing.T) {
	stop := make(chan struct{})
	close(stop)
	start := time.Now()
	if err := (Policy{Min: time.Hour, Max: time.Hour}).Wait(context.Background(), 1, stop); !errors.Is(err, ErrStopped) {
		t.Fatalf("Wait = %v, want ErrStopped", err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("Wait did not return at once")
	}
}
