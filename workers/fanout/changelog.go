package fanout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// changelog reads im.sequenced, the changelog of what fanout wrote to
// Redis, for a restore. It reads partitions directly (no consumer group):
// a restore commits nothing.
type changelog struct {
	brokers []string
	topic   string
	timeout time.Duration // of each broker request
}

// span returns every partition's log start and end offset now.
func (c changelog) span(ctx context.Context) (start, end map[int32]int64, err error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...))
	if err != nil {
		return nil, nil, fmt.Errorf("changelog client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, c.topic)
	if err != nil {
		return nil, nil, fmt.Errorf("end offsets of %s: %w", c.topic, err)
	}
	starts, err := adm.ListStartOffsets(ctx, c.topic)
	if err != nil {
		return nil, nil, fmt.Errorf("start offsets of %s: %w", c.topic, err)
	}
	start, end = map[int32]int64{}, map[int32]int64{}
	var ferr error
	collect := func(into map[int32]int64) func(kadm.ListedOffset) {
		return func(o kadm.ListedOffset) {
			if o.Err != nil {
				ferr = errors.Join(ferr, fmt.Errorf("offsets of %s/%d: %w", c.topic, o.Partition, o.Err))
			}
			into[o.Partition] = o.Offset
		}
	}
	ends.Each(collect(end))
	starts.Each(collect(start))
	if len(end) == 0 && ferr == nil {
		ferr = fmt.Errorf("offsets of %s: no partitions (does the topic exist?)", c.topic)
	}
	return start, end, ferr
}

// read hands apply the records of each partition p from from[p] up to
// to[p], in offset order within a partition, at most chunk at a time.
// A start that retention already removed reads from the log start.
func (c changelog) read(ctx context.Context, from, to map[int32]int64, chunk int,
	apply func(context.Context, []*kgo.Record) error) error {
	parts := map[int32]kgo.Offset{}
	next := map[int32]int64{}
	for p, end := range to {
		if from[p] < end {
			parts[p] = kgo.NewOffset().At(from[p])
			next[p] = from[p]
		}
	}
	if len(parts) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.topic: parts}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return fmt.Errorf("changelog client: %w", err)
	}
	defer cl.Close()
	for !reachedAll(next, to) {
		fs := cl.PollRecords(ctx, chunk)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %s: %w", c.topic, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				ferr = errors.Join(ferr, fmt.Errorf("fetch %s/%d: %w", t, p, err))
			}
		})
		if ferr != nil {
			return ferr
		}
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < to[r.Partition] {
				recs = append(recs, r)
			}
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
		})
		if len(recs) > 0 {
			if err := apply(ctx, recs); err != nil {
				return err
			}
		}
	}
	return nil
}

func reachedAll(next, to map[int32]int64) bool {
	for p, n := range next {
		if n < to[p] {
			return false
		}
	}
	return true
}
