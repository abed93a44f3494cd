package fanout

import (
	"sync"
	"time"
)

// hotMeter measures inbox writes per user over a sliding window and says
// when a user's rate is far above normal. The window slides by weighting
// the previous fixed window by the part of it still inside the sliding
// one, which keeps two counters per active user instead of a ring.
// "Normal" is the mean rate of the other users written in the window, so
// the threshold follows the load instead of a static list; with nobody
// else to compare with there is no verdict.
type hotMeter struct {
	window    time.Duration
	factor    float64
	minWrites float64

	mu        sync.Mutex
	start     time.Time // start of the current fixed window
	cur, prev map[string]float64
	curSum    float64
	prevSum   float64
	hot       map[string]bool // users reported hot and still above the line
}

func newHotMeter(window time.Duration, factor float64, minWrites int) *hotMeter {
	return &hotMeter{window: window, factor: factor, minWrites: float64(minWrites),
		cur: map[string]float64{}, prev: map[string]float64{}, hot: map[string]bool{}}
}

// observe counts n writes for user at now. It returns true the first time
// the user's rate crosses the hot line (once per episode), with the user's
// writes in the window and the line.
func (h *hotMeter) observe(now time.Time, user string, n int) (becameHot bool, rate, line float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rotate(now)
	h.cur[user] += float64(n)
	h.curSum += float64(n)
	weight := 1 - float64(now.Sub(h.start))/float64(h.window)
	rate = h.cur[user] + weight*h.prev[user]
	others := max(len(h.cur), len(h.prev)) - 1
	if others < 1 {
		return false, rate, 0
	}
	mean := (h.curSum + weight*h.prevSum - rate) / float64(others)
	line = max(h.minWrites, h.factor*mean)
	if rate >= line && !h.hot[user] {
		h.hot[user] = true
		return true, rate, line
	}
	return false, rate, line
}

// rotate starts a new fixed window when now left the current one. Users
// stay hot while their last full window was above the line.
func (h *hotMeter) rotate(now time.Time) {
	if h.start.IsZero() {
		h.start = now
		return
	}
	if now.Sub(h.start) < h.window {
		return
	}
	if now.Sub(h.start) >= 2*h.window {
		h.cur, h.curSum = map[string]float64{}, 0
	}
	h.prev, h.prevSum = h.cur, h.curSum
	h.cur, h.curSum = map[string]float64{}, 0
	h.start = h.start.Add(now.Sub(h.start) / h.window * h.window)
	still := map[string]bool{}
	for u := range h.hot {
		mean := (h.prevSum - h.prev[u]) / float64(max(len(h.prev)-1, 1))
		if h.prev[u] >= max(h.minWrites, h.factor*mean) {
			still[u] = true
		}
	}
	h.hot = still
}

// hotCount is how many users are hot now.
func (h *hotMeter) hotCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.hot)
}
