package live

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestDeliveryConfirmationCountsEachBoundNoLaterThanIt: a push acked
// after d counts in every bound at or above d and in none below.
func TestDeliveryConfirmationCountsEachBoundNoLaterThanIt(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	tests := []struct {
		name  string
		took  time.Duration
		want  []float64 // 1s, 10s, 1m
		count uint64
	}{
		{"at once", 200 * time.Millisecond, []float64{1, 1, 1}, 1},
		{"exactly a second", time.Second, []float64{1, 1, 1}, 1},
		{"in five seconds", 5 * time.Second, []float64{0, 1, 1}, 1},
		{"in half a minute", 30 * time.Second, []float64{0, 0, 1}, 1},
		{"after two minutes", 2 * time.Minute, []float64{0, 0, 0}, 1},
		{"a clock ahead of the writer", -time.Second, []float64{1, 1, 1}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := newDeliveryMetrics()
			d.confirmed(now, now.Add(-tt.took).UnixMilli())
			for i, b := range d.within {
				if got := testutil.ToFloat64(b.count); got != tt.want[i] {
					t.Errorf("within %s = %v, want %v", deliveryBounds[i].label, got, tt.want[i])
				}
			}
			if got := testutil.CollectAndCount(d.confirm); got != 1 {
				t.Errorf("histogram series %d, want 1", got)
			}
		})
	}
	d, _ := newDeliveryMetrics()
	d.confirmed(now, 0) // no write time: nothing to measure from
	if got := testutil.ToFloat64(d.within[2].count); got != 0 {
		t.Errorf("a push without a write time counted: %v", got)
	}
}
