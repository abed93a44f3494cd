package checker

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/backoff"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/schemas"
)

// records encodes items as records of im.messages keyed by conversation.
func records(items []Item) ([]*kgo.Record, error) {
	out := make([]*kgo.Record, len(items))
	for i, it := range items {
		v, key := it.Raw, it.Key
		if it.Msg != nil {
			var err error
			if v, err = proto.Marshal(it.Msg); err != nil {
				return nil, fmt.Errorf("encode %s: %w", it.Msg.GetClientMsgId(), err)
			}
			key = it.Msg.GetConvId()
		}
		out[i] = &kgo.Record{Topic: schemas.TopicMessages, Key: []byte(key), Value: v}
	}
	return out, nil
}

// produceAll sends recs and, while the broker refuses some, sends those
// again (in order) with backoff until ctx ends: the load generator never
// gives up on a record. A record the broker took although it answered an
// error is in the log twice; the fanout's dedupe makes that harmless.
func produceAll(ctx context.Context, cl *kgo.Client, recs []*kgo.Record, retries *atomic.Int64) error {
	retry := backoff.Policy{Min: 100 * time.Millisecond, Max: 2 * time.Second}
	for attempt := 1; len(recs) > 0; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res := cl.ProduceSync(pctx, recs...)
		cancel()
		var failed []*kgo.Record
		var last error
		for _, r := range res {
			if r.Err != nil {
				failed = append(failed, &kgo.Record{Topic: r.Record.Topic, Key: r.Record.Key, Value: r.Record.Value})
				last = r.Err
			}
		}
		if len(failed) == 0 {
			return nil
		}
		retries.Add(int64(len(failed)))
		if err := retry.Wait(ctx, attempt, nil); err != nil {
			return fmt.Errorf("produce %d records: %w (last error: %v)", len(failed), err, last)
		}
		recs = failed
	}
	return nil
}

// paced produces items in steps spread over d, each step waiting for the
// broker, and counts what is done.
func paced(ctx context.Context, cl *kgo.Client, items []Item, d time.Duration, done, retries *atomic.Int64) error {
	const tick = 100 * time.Millisecond
	steps := max(1, int(d/tick))
	per := max(1, (len(items)+steps-1)/steps)
	next := time.Now()
	for start := 0; start < len(items); start += per {
		part := items[start:min(start+per, len(items))]
		recs, err := records(part)
		if err != nil {
			return err
		}
		if err := produceAll(ctx, cl, recs, retries); err != nil {
			return err
		}
		done.Add(int64(len(part)))
		next = next.Add(tick)
		if err := harness.Sleep(ctx, time.Until(next)); err != nil {
			return err
		}
	}
	return nil
}
