package stream

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrNotReady wraps every reason Ready gives.
var ErrNotReady = errors.New("stream runner not ready")

// readyStale is how long after its last poll a runner still counts as
// consuming: a batch held longer than that waits for a store.
const readyStale = 30 * time.Second

// readiness is what Ready reads: set by the group's callbacks and the
// poll loop.
type readiness struct {
	joined   atomic.Bool
	lastPoll atomic.Int64 // unix nanoseconds of the last poll's start; 0: none
}

// onAssigned runs after every join of the group (franz-go calls it with
// an empty map too): the member is in the group.
func (r *Runner) onAssigned(context.Context, *kgo.Client, map[string][]int32) {
	r.ready.joined.Store(true)
}

// Ready says whether the runner is in its group and consumes: it joined
// (and did not lose its place since) and its loop polled within the last
// 30 s, so that no batch is stuck behind a store that does not answer.
func (r *Runner) Ready() error {
	if !r.ready.joined.Load() {
		return fmt.Errorf("%w: %s has not joined its group", ErrNotReady, r.cfg.Group)
	}
	last := r.ready.lastPoll.Load()
	if last == 0 {
		return fmt.Errorf("%w: %s does not poll yet", ErrNotReady, r.cfg.Group)
	}
	if since := time.Since(time.Unix(0, last)); since > readyStale {
		return fmt.Errorf("%w: %s last polled %s ago (a batch waits for a store)", ErrNotReady, r.cfg.Group, since.Round(time.Second))
	}
	return nil
}
