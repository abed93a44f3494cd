package stream

import (
	"testing"
	"time"
)

func TestBackoffDelay_GrowsExponentiallyWithinBounds(t *testing.T) {
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
			got := backoffDelay(tt.attempt, lo, hi, tt.jitter)
			if tt.jitter > 0.99 {
				if got < tt.want-time.Microsecond || got >= lo {
					t.Fatalf("backoffDelay(%d, jitter %v) = %v, want just below %v", tt.attempt, tt.jitter, got, lo)
				}
				return
			}
			if got != tt.want {
				t.Fatalf("backoffDelay(%d, jitter %v) = %v, want %v", tt.attempt, tt.jitter, got, tt.want)
			}
		})
	}
}

func TestBackoffDelay_NeverExceedsRetryMax(t *testing.T) {
	const lo, hi = 30 * time.Millisecond, 500 * time.Millisecond
	for attempt := 1; attempt < 100; attempt++ {
		for _, j := range []float64{0, 0.3, 0.999} {
			if d := backoffDelay(attempt, lo, hi, j); d > hi || d < lo/2 {
				t.Fatalf("attempt %d jitter %v: %v outside [%v, %v]", attempt, j, d, lo/2, hi)
			}
		}
	}
}
