package stream

import "time"

// backoffDelay is the wait before retry number attempt (1 for the first):
// lo doubled attempt-1 times, capped at hi, then scaled by a jitter in
// [0, 1) to somewhere in [d/2, d). The jitter keeps the members of a group
// that failed together (a store went down) from retrying in lockstep.
func backoffDelay(attempt int, lo, hi time.Duration, jitter float64) time.Duration {
	d := lo
	for i := 1; i < attempt && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	half := d / 2
	return half + time.Duration(float64(d-half)*jitter)
}
