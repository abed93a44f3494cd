package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Backoff is the reconnect and retry policy: full jitter (a wait drawn
// uniformly from [0, min(Max, Base·2^attempt)]), so that devices that
// lost the server together do not come back together; a Retry-After of
// the answer is honoured as the least wait.
type Backoff struct {
	Base time.Duration // 200 ms when 0
	Max  time.Duration // 30 s when 0
	// Attempts bounds the tries of one call (0: until the context ends).
	Attempts int
}

// Wait is the wait before try attempt+1 after err.
func (b Backoff) Wait(attempt int, err error) time.Duration {
	base, most := b.Base, b.Max
	if base <= 0 {
		base = 200 * time.Millisecond
	}
	if most <= 0 {
		most = 30 * time.Second
	}
	ceil := most
	if attempt < 30 && base<<attempt < most {
		ceil = base << attempt
	}
	d := time.Duration(rand.Int64N(int64(ceil) + 1))
	var se *StatusError
	if errors.As(err, &se) && se.RetryAfter > d {
		d = se.RetryAfter
	}
	return d
}

// retry runs fn until it succeeds, fails for good (an error that is not
// retryable), the attempts run out or ctx ends.
func (b Backoff) retry(ctx context.Context, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil || !retryable(err) || b.Attempts > 0 && attempt+1 >= b.Attempts {
			return err
		}
		t := time.NewTimer(b.Wait(attempt, err))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}
