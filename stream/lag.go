package stream

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// lagLoop publishes the group's consumer lag every LagInterval until ctx
// ends: for each partition this member owns, the log end offset minus the
// group's committed offset (kadm computes both from the brokers). Measured
// from the commits, the gauge grows while a batch stalls on a store that
// is down, which is when an operator needs it; a gauge moved only by
// successful batches would stay still exactly then.
func (r *Runner) lagLoop(ctx context.Context) {
	adm := kadm.NewClient(r.cl)
	t := time.NewTicker(r.cfg.LagInterval)
	defer t.Stop()
	published := map[topicPartition]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		published = r.measureLag(ctx, adm, published)
	}
}

// measureLag publishes the lag of the partitions this member owns now and
// drops the series of those it published before and owns no more. On an
// error nothing changes: the last values stand until the next measure.
func (r *Runner) measureLag(ctx context.Context, adm *kadm.Client, before map[topicPartition]bool) map[topicPartition]bool {
	mctx, cancel := context.WithTimeout(ctx, r.cfg.CommitTimeout)
	defer cancel()
	lags, err := adm.Lag(mctx, r.cfg.Group)
	if err == nil {
		err = lags.Error()
	}
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Logger.Debug("measure consumer lag failed", "group", r.cfg.Group, "err", err)
		}
		return before
	}
	me, _ := r.cl.GroupMetadata()
	now := map[topicPartition]bool{}
	for topic, parts := range lags[r.cfg.Group].Lag {
		for p, l := range parts {
			if l.Err != nil || l.Member == nil || l.Member.MemberID != me {
				continue
			}
			tp := topicPartition{topic, p}
			now[tp] = true
			r.m.setLag(topic, p, l.Lag)
		}
	}
	for tp := range before {
		if !now[tp] {
			r.m.forgetLag(tp.topic, tp.partition)
		}
	}
	return now
}
