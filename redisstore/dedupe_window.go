package redisstore

import "sync"

// dedupeWindows keep, per conversation, what sequencing last read of the
// dedupe window's older days (all but today), so that a call reads today's
// bucket 0 alone instead of the window's eight. Only sequencing adds ids,
// and only to its today: an older day stays as it was read but for a
// restore putting ids back, and the script checks what it is given
// against the days as they are (a day given as empty with one EXISTS, the
// keys a day given as holding ids needs with dd_missing), so a copy gone
// stale costs a call read again in full (OBDEDUPE), never a missed resend.
type dedupeWindows struct {
	mu   sync.Mutex
	wins bounded[dedupeWindow]
}

type dedupeWindow struct {
	today int64       // the day the copy's window ends with
	older []dedupeDay // newest first
}

// maxDedupeWindows bounds the conversations whose window is kept.
const maxDedupeWindows = 1 << 16

func newDedupeWindows() *dedupeWindows {
	return &dedupeWindows{wins: newBounded[dedupeWindow](maxDedupeWindows, 0)}
}

// older returns conv's older days as read for a window ending with today.
func (w *dedupeWindows) older(conv string, today int64) ([]dedupeDay, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	win, ok := w.wins.get(conv)
	if !ok || win.today != today {
		return nil, false
	}
	return win.older, true
}

func (w *dedupeWindows) keep(conv string, today int64, older []dedupeDay) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wins.put(conv, dedupeWindow{today: today, older: older}, 1)
}

func (w *dedupeWindows) forget(conv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wins.remove(conv)
}
