package live

import "sync"

// fullCatchUps are the catch-ups after a resubscription that found the
// workers' queue full. They are put here on the bus's reader and turned
// into notices on the dispatcher (noticeResubscribedFull): at most one
// per connection and conversation listened to, as each is marked
// catching up meanwhile.
//
// mu guards jobs, and nothing else; no other lock is taken while it is
// held. signal, buffered by one, wakes the dispatcher; it is sent on
// after mu is released.
type fullCatchUps struct {
	mu     sync.Mutex
	jobs   []catchUpJob
	signal chan struct{}
}

func newFullCatchUps() fullCatchUps { return fullCatchUps{signal: make(chan struct{}, 1)} }

// add keeps jobs for the dispatcher and wakes it.
func (f *fullCatchUps) add(jobs ...catchUpJob) {
	f.mu.Lock()
	f.jobs = append(f.jobs, jobs...)
	f.mu.Unlock()
	select {
	case f.signal <- struct{}{}:
	default: // the dispatcher is woken already
	}
}

// take takes every job kept so far.
func (f *fullCatchUps) take() []catchUpJob {
	f.mu.Lock()
	defer f.mu.Unlock()
	jobs := f.jobs
	f.jobs = nil
	return jobs
}
