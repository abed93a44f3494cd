package checker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EndOffsets are the high watermarks of topic's partitions.
func EndOffsets(ctx context.Context, brokers []string, topic string) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	lo, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	out := map[int32]int64{}
	var ferr error
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && ferr == nil {
			ferr = fmt.Errorf("end offset of %s/%d: %w", topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out, ferr
}

// ScanTopic calls fn with every record of topic from its start up to its
// end as of the call, each partition in order; partitions is the topic's
// partition count. Records produced meanwhile are not given.
func ScanTopic(ctx context.Context, brokers []string, topic string, fn func(r *kgo.Record, partitions int32)) error {
	ends, err := EndOffsets(ctx, brokers, topic)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	next := map[int32]int64{}
	for !reached(next, ends) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %s: %w", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < ends[r.Partition] {
				fn(r, int32(len(ends)))
			}
			next[r.Partition] = r.Offset + 1
		})
	}
	return nil
}

// ReadTopic is every record of topic up to its end now, read within a
// minute.
func ReadTopic(ctx context.Context, brokers []string, topic string) ([]*kgo.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var out []*kgo.Record
	err := ScanTopic(ctx, brokers, topic, func(r *kgo.Record, _ int32) { out = append(out, r) })
	return out, err
}

func reached(next, ends map[int32]int64) bool {
	for p, end := range ends {
		if next[p] < end {
			return false
		}
	}
	return true
}
