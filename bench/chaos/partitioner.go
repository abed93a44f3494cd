package main

import (
	"context"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/bench/checker"
	"github.com/offlinebox/offlinebox/schemas"
)

// foreignPartitioner: the stream is produced as librdkafka's default
// partitioner (consistent_random) places keyed records, by the CRC32 of
// the key, while devices send through the API (murmur2) on the same
// conversations, with two fanout processes. Fanout must forward every
// misplaced record so that one owner sequences each conversation.
func foreignPartitioner() scenario {
	crc := kgo.BasicConsistentPartitioner(func(string) func(*kgo.Record, int) int {
		return func(r *kgo.Record, n int) int { return int(crc32.ChecksumIEEE(r.Key) % uint32(n)) }
	})
	return scenario{name: "foreign-partitioner",
		about: "the stream produced by a CRC32 partitioner (librdkafka's default) beside the API's murmur2 on the same conversations, " +
			"two fanout processes: misplaced records forwarded to their conversation's partition, one owner each",
		fanouts: 2, streamOpts: []kgo.Opt{kgo.RecordPartitioner(crc)}, fault: countForwards}
}

// countForwards waits for the end of the stream and counts the forwards
// in im.messages so far.
func countForwards(ctx context.Context, s *suite, e *env, run *checker.Run) (string, error) {
	if err := at(ctx, run, 1); err != nil {
		return "", err
	}
	recs, err := checker.ReadTopic(ctx, e.brokers, schemas.TopicMessages)
	if err != nil {
		return "", err
	}
	forwarded := 0
	for _, r := range recs {
		for _, h := range r.Headers {
			if h.Key == schemas.HeaderForwardedFrom {
				forwarded++
			}
		}
	}
	s.log.Printf("%s: %d of %d records of im.messages are forwards", e.name, forwarded, len(recs))
	return fmt.Sprintf("stream placed by CRC32 of the key; %d of %d im.messages records were forwards by the end of the stream", forwarded, len(recs)), nil
}
