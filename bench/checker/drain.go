package checker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

// GroupTopics names a consumer group and the topics it consumes.
type GroupTopics struct {
	Group  string
	Topics []string
}

// WaitCaughtUp waits until every group has committed, on every partition
// of its topics, the end offset the partition had when the wait began
// or later: everything produced before was handled and its effects are
// durable (the runner commits only then).
func WaitCaughtUp(ctx context.Context, brokers []string, groups ...GroupTopics) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, g := range groups {
		ends := map[string]map[int32]int64{}
		for _, t := range g.Topics {
			e, err := EndOffsets(ctx, brokers, t)
			if err != nil {
				return err
			}
			ends[t] = e
		}
		for {
			behind, err := lagging(ctx, adm, g.Group, ends)
			if err == nil && behind == 0 {
				break
			}
			if werr := harness.Sleep(ctx, 200*time.Millisecond); werr != nil {
				return fmt.Errorf("group %s: %d records not committed (%v): %w", g.Group, behind, err, werr)
			}
		}
	}
	return nil
}

// lagging counts the records of ends that group has not committed.
func lagging(ctx context.Context, adm *kadm.Client, group string, ends map[string]map[int32]int64) (int64, error) {
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(fctx, group)
	if err != nil {
		return -1, err
	}
	var behind int64
	for t, ps := range ends {
		for p, end := range ps {
			at := int64(0)
			if o, ok := offs.Lookup(t, p); ok && o.Err == nil {
				at = o.At
			}
			behind += max(0, end-at)
		}
	}
	return behind, nil
}

// Progress sums, over topic's partitions, the offsets group has committed
// and the end offsets: end - committed is the group's lag.
func Progress(ctx context.Context, brokers []string, group, topic string) (committed, end int64, err error) {
	ends, err := EndOffsets(ctx, brokers, topic)
	if err != nil {
		return 0, 0, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return 0, 0, fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).FetchOffsets(fctx, group)
	if err != nil {
		return 0, 0, fmt.Errorf("offsets of %s: %w", group, err)
	}
	for p, e := range ends {
		end += e
		if o, ok := offs.Lookup(topic, p); ok && o.Err == nil {
			committed += o.At
		}
	}
	return committed, end, nil
}
