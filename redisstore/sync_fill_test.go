package redisstore

import (
	"fmt"
	"testing"
)

func TestPickWaveReadsOnlySlicesEstimatedToFit(t *testing.T) {
	plan := func(news uint64) convPlan { return convPlan{maxSeq: 100 + news, lo: 100} }
	plans := []convPlan{plan(200), plan(3), plan(50), plan(1)}
	cases := []struct {
		name     string
		first    bool
		room     int
		measured syncEstimate
		want     string
	}{
		// 512 bytes guessed per message, limit 20: 10240, 1536, 10240, 512.
		{"the answer's first conversation is always read", true, 100, syncEstimate{}, "[0]"},
		{"then what fits, in order", false, 12000, syncEstimate{}, "[0 1]"},
		{"measured sizes replace the guess", false, 12000, syncEstimate{bytes: 100, msgs: 1}, "[0 1 2 3]"},
		{"nothing fits", false, 100, syncEstimate{}, "[]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := SyncRequest{Limit: 20}
			wave, scanned := pickWave(req, plans, 0, tc.first, tc.room, &tc.measured)
			if fmt.Sprint(wave) != tc.want || scanned != len(plans) {
				t.Fatalf("wave %v scanned %d, want %s scanned %d", wave, scanned, tc.want, len(plans))
			}
		})
	}
}
