package stream

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// onRevoked runs in franz-go's group goroutine before revoked partitions go
// to another member, never during a batch (BlockRebalanceOnPoll). It
// commits what is finished, synchronously, then forgets the revoked
// partitions: from here on, a commit for them could move another member's
// position (see doc.go).
func (r *Runner) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CommitTimeout)
	defer cancel()
	if err := r.state.commit(cctx, cl); err != nil {
		r.m.commitFailed.Inc()
		r.cfg.Logger.Warn("commit on revoke failed; the next owner repeats those records",
			"group", r.cfg.Group, "revoked", revoked, "err", err)
	}
	r.state.forget(revoked)
	r.forgetLag(revoked)
	if len(revoked) > 0 {
		r.cfg.Logger.Info("partitions revoked", "group", r.cfg.Group, "revoked", revoked)
	}
}

// onLost runs when the member lost its partitions without a revoke (session
// expired, fenced). Another member may already own them: nothing of theirs
// is committed, their finished offsets are dropped, and the new owner repeats
// the records since the last commit (handlers are idempotent).
func (r *Runner) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	r.ready.joined.Store(false) // until the next join
	r.state.forget(lost)
	r.forgetLag(lost)
	r.cfg.Logger.Warn("partitions lost without revoke; their uncommitted work will be repeated",
		"group", r.cfg.Group, "lost", lost)
}

// onBlocked is franz-go's signal that a rebalance waits for the batch in
// flight. Handle calls are never interrupted; retry loops stop at their next
// wait and their partitions are rewound.
func (r *Runner) onBlocked(context.Context, *kgo.Client) {
	r.abortMu.Lock()
	defer r.abortMu.Unlock()
	if r.abort == nil {
		return
	}
	select {
	case <-r.abort:
	default:
		close(r.abort)
		r.cfg.Logger.Info("rebalance waiting for the batch in flight; stopping retries", "group", r.cfg.Group)
	}
}

// armAbort gives the next batch a fresh abort channel. It is armed before
// the poll: once a poll returned records, the rebalance they block can
// signal at once.
func (r *Runner) armAbort() <-chan struct{} {
	r.abortMu.Lock()
	defer r.abortMu.Unlock()
	r.abort = make(chan struct{})
	return r.abort
}

func (r *Runner) disarmAbort() {
	r.abortMu.Lock()
	defer r.abortMu.Unlock()
	r.abort = nil
}

func (r *Runner) forgetLag(partitions map[string][]int32) {
	for topic, ps := range partitions {
		for _, p := range ps {
			r.m.forgetLag(topic, p)
		}
	}
}
