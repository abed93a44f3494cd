package fanout

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
)

// One owner sequences a conversation: the owner of the partition its
// conv_id hashes to (stream.KeyPartition, the Java client's and franz-go's
// rule). A record read from any other partition (a producer with another
// partitioner, librdkafka's default among them, or a key that is not the
// conv_id) is not sequenced where it was read: it is produced again, key,
// value and headers as they were plus schemas.HeaderForwardedFrom, to the
// partition its conv_id hashes to, where that partition's owner sequences
// it. The placement is judged by the conv_id in the body, never by the key,
// so a record without a key or with another key is placed too. A forward
// is an effect of the batch: the batch returns nil, and its offsets are
// committed, only after the broker acknowledged every forward. A forward
// lands on the partition its conversation hashes to, so it is never
// forwarded again unless partitions were added meanwhile (a count only
// grows, so that ends). A forward repeated by a retried batch is a
// duplicate its owner answers with the first seq.

// Bounds of the partition counts the placement is judged against.
const (
	partitionCountTTL     = 30 * time.Second
	partitionCountTimeout = 10 * time.Second
	forwardWarnEvery      = time.Minute
)

// forwarder produces misplaced records to their conversation's partition.
type forwarder struct {
	cl     *kgo.Client // a manual partitioner: each forward names its partition
	counts *stream.PartitionCounts
	warned atomic.Int64 // unix ms of the last warning, at most one per forwardWarnEvery
}

func newForwarder(brokers []string) (*forwarder, error) {
	cl, err := stream.NewProducer(brokers, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, fmt.Errorf("forwarding client: %w", err)
	}
	return &forwarder{cl: cl, counts: stream.NewPartitionCounts(cl, partitionCountTTL, partitionCountTimeout)}, nil
}

// place splits the records (one partition's) and forwards those read from
// a partition their conversation does not hash to; a forward the broker
// refuses for good is a dead letter of the batch.
func (f *Fanout) place(ctx context.Context, records []*kgo.Record) (splitBatch, error) {
	if len(records) == 0 {
		return splitBatch{byConv: map[string][]pending{}}, nil
	}
	n, err := f.fwd.counts.Count(ctx, records[0].Topic, records[0].Partition)
	if err != nil {
		return splitBatch{}, err
	}
	b := f.split(records, n)
	dead, err := f.forward(ctx, b.misplaced, n)
	if err != nil {
		return splitBatch{}, err
	}
	b.dead = append(b.dead, dead...)
	return b, nil
}

// forward produces each misplaced record to its conversation's partition
// of the topic it was read from, of n, and waits for the broker.
func (f *Fanout) forward(ctx context.Context, misplaced []pending, n int32) ([]stream.DeadLetter, error) {
	if len(misplaced) == 0 {
		return nil, nil
	}
	recs := make([]*kgo.Record, len(misplaced))
	from := make(map[*kgo.Record]*kgo.Record, len(misplaced))
	for i, p := range misplaced {
		recs[i] = forwardRecord(p.rec, stream.KeyPartition([]byte(p.msg.GetConvId()), n))
		from[recs[i]] = p.rec
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.ProduceTimeout)
	defer cancel()
	var dead []stream.DeadLetter
	for _, res := range f.fwd.cl.ProduceSync(ctx, recs...) {
		src := from[res.Record]
		switch {
		case res.Err == nil:
			f.metrics.forwarded.Inc()
		case stream.PermanentProduceError(res.Err):
			dead = append(dead, stream.DeadLetter{Record: src, Reason: fmt.Sprintf(
				"read from partition %d of %s, where its conversation does not hash; its forward to partition %d was refused: %v",
				src.Partition, src.Topic, res.Record.Partition, res.Err)})
		default:
			return nil, fmt.Errorf("forward %d misplaced records of %s/%d: %w", len(recs), misplaced[0].rec.Topic,
				misplaced[0].rec.Partition, res.Err)
		}
	}
	now := time.Now().UnixMilli()
	if last := f.fwd.warned.Load(); now-last < forwardWarnEvery.Milliseconds() || !f.fwd.warned.CompareAndSwap(last, now) {
		return dead, nil
	}
	f.cfg.Logger.Warn("records read from a partition their conversation does not hash to were forwarded; "+
		"their producer must use a murmur2 partitioner (librdkafka: partitioner=murmur2_random)",
		"topic", misplaced[0].rec.Topic, "partition", misplaced[0].rec.Partition, "records", len(misplaced),
		"conv", misplaced[0].msg.GetConvId())
	return dead, nil
}

// forwardRecord is src, as it was, for partition p, naming where it was
// read. A fresh record: franz-go owns the fields of one it produces.
func forwardRecord(src *kgo.Record, p int32) *kgo.Record {
	headers := make([]kgo.RecordHeader, 0, len(src.Headers)+1)
	headers = append(headers, src.Headers...)
	headers = append(headers, kgo.RecordHeader{Key: schemas.HeaderForwardedFrom,
		Value: []byte(strconv.Itoa(int(src.Partition)) + "/" + strconv.FormatInt(src.Offset, 10))})
	return &kgo.Record{Topic: src.Topic, Partition: p, Key: src.Key, Value: src.Value, Headers: headers,
		Timestamp: src.Timestamp}
}
