package readpath

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
		decided  []bool
		want     string
	}{
		// 512 bytes guessed per message, limit 20: 10240, 1536, 10240, 512.
		{"the answer's first conversation is always read", true, 100, syncEstimate{}, nil, "[0]"},
		{"then what fits, in order", false, 12000, syncEstimate{}, nil, "[0 1]"},
		{"measured sizes replace the guess", false, 12000, syncEstimate{bytes: 100, msgs: 1}, nil, "[0 1 2 3]"},
		{"nothing fits", false, 100, syncEstimate{}, nil, "[]"},
		{"conversations already decided are passed over", false, 12000, syncEstimate{}, []bool{true, false, true, false}, "[1 3]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := SyncRequest{Limit: 20}
			decided := tc.decided
			if decided == nil {
				decided = make([]bool, len(plans))
			}
			if wave := pickWave(req, plans, decided, tc.first, tc.room, &tc.measured); fmt.Sprint(wave) != tc.want {
				t.Fatalf("wave %v, want %s", wave, tc.want)
			}
		})
	}
}
