// Package backoff is the one retry policy of offlinebox: exponential delays
// between a floor and a ceiling, each scaled by a random jitter so that the
// processes that failed together (a store went down) do not retry in
// lockstep. The stream runner, the tools' store waits, the retention
// worker, the device census and the load checker all wait through it.
package backoff

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Policy is an exponential backoff: retry n waits Min doubled n-1 times,
// capped at Max, then scaled by a jitter into [d/2, d).
type Policy struct {
	Min, Max time.Duration
}

// Delay is the wait before retry number attempt (1 for the first) with the
// given jitter in [0, 1).
func (p Policy) Delay(attempt int, jitter float64) time.Duration {
	hi := max(p.Max, p.Min)
	d := p.Min
	for i := 1; i < attempt && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	half := d / 2
	return half + time.Duration(float64(d-half)*jitter)
}

// Jittered is the delay of attempt with a random jitter.
func (p Policy) Jittered(attempt int) time.Duration {
	return p.Delay(attempt, rand.Float64())
}

// Wait sleeps the jittered delay of attempt. It returns ctx's error, at
// once, when ctx ends first, and stop's close (a nil stop never closes)
// ends it early too, returning ErrStopped.
func (p Policy) Wait(ctx context.Context, attempt int, stop <-chan struct{}) error {
	t := time.NewTimer(p.Jittered(attempt))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return ErrStopped
	}
}

// ErrStopped is Wait's error when its stop channel closed.
var ErrStopped = stoppedError{}

type stoppedError struct{}

func (stoppedError) Error() string { return "backoff stopped" }

// Retry calls f until it returns nil or ctx ends, waiting the policy's
// delay between calls. onRetry, when not nil, is told of every failure
// that is retried (attempt counts from 1). When ctx ends, Retry returns a
// GaveUpError with f's last error of its own: an attempt that ctx cut
// short says less than the one before it.
func Retry(ctx context.Context, p Policy, f func(context.Context) error, onRetry func(attempt int, err error)) error {
	var notify func(int, error, time.Duration)
	if onRetry != nil {
		notify = func(attempt int, err error, _ time.Duration) { onRetry(attempt, err) }
	}
	return RetryWait(ctx, p, f, notify)
}

// RetryWait is Retry whose onRetry is told, too, how long it waits before
// the next attempt.
func RetryWait(ctx context.Context, p Policy, f func(context.Context) error, onRetry func(attempt int, err error, wait time.Duration)) error {
	var prev error
	for attempt := 1; ; attempt++ {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			if prev != nil && errors.Is(err, ctx.Err()) {
				err = prev
			}
			return &GaveUpError{Last: err, Cause: ctx.Err()}
		}
		prev = err
		wait := p.Jittered(attempt)
		if onRetry != nil {
			onRetry(attempt, err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return &GaveUpError{Last: err, Cause: ctx.Err()}
		}
	}
}

// GaveUpError is Retry's error when ctx ended: the last failure and why
// no further attempt was made.
type GaveUpError struct {
	Last  error
	Cause error
}

func (e *GaveUpError) Error() string { return e.Last.Error() }

// Unwrap gives both errors to errors.Is and errors.As.
func (e *GaveUpError) Unwrap() []error { return []error{e.Last, e.Cause} }
