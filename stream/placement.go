package stream

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KeyPartition is the partition, of n, that a record keyed key belongs on:
// the murmur2 hash of the key, made positive, mod n. It is the rule of the
// Java client's default partitioner and of franz-go's default
// (kgo.StickyKeyPartitioner(nil), kgo.KafkaHasher over murmur2), and of
// librdkafka with partitioner=murmur2_random. n must be at least 1.
func KeyPartition(key []byte, n int32) int32 {
	return int32(murmur2(key)&0x7fffffff) % n
}

// murmur2 is Kafka's murmur2 (the Java client's Utils.murmur2, seed
// 0x9747b28c), as franz-go computes it.
func murmur2(b []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(b))
	for len(b) >= 4 {
		k := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		b = b[4:]
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// PartitionCounts caches the partition count of topics from the brokers'
// metadata. A count is read again after its TTL, and at once when a record
// comes from a partition at or above it (partitions were added).
type PartitionCounts struct {
	adm     *kadm.Client
	ttl     time.Duration
	timeout time.Duration // of one metadata request

	mu     sync.Mutex // guards counts
	counts map[string]partitionCount
}

type partitionCount struct {
	n    int32
	read time.Time
}

// maxCachedTopics bounds the cache: a worker reads a few topics.
const maxCachedTopics = 64

// NewPartitionCounts reads metadata through cl (which the caller closes),
// trusting a count for ttl; each request is bounded by timeout.
func NewPartitionCounts(cl *kgo.Client, ttl, timeout time.Duration) *PartitionCounts {
	return &PartitionCounts{adm: kadm.NewClient(cl), ttl: ttl, timeout: timeout, counts: map[string]partitionCount{}}
}

// Count returns topic's partition count, at least seen+1: a record read
// from partition seen proves that many exist.
func (p *PartitionCounts) Count(ctx context.Context, topic string, seen int32) (int32, error) {
	p.mu.Lock()
	c, ok := p.counts[topic]
	p.mu.Unlock()
	if ok && seen < c.n && time.Since(c.read) < p.ttl {
		return c.n, nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	details, err := p.adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("partitions of %s: %w", topic, err)
	}
	d, ok := details[topic]
	switch {
	case !ok:
		return 0, fmt.Errorf("partitions of %s: not in the metadata", topic)
	case d.Err != nil:
		return 0, fmt.Errorf("partitions of %s: %w", topic, d.Err)
	case int32(len(d.Partitions)) <= seen:
		return 0, fmt.Errorf("partitions of %s: metadata names %d, a record came from partition %d", topic, len(d.Partitions), seen)
	}
	n := int32(len(d.Partitions))
	p.mu.Lock()
	if _, known := p.counts[topic]; !known && len(p.counts) >= maxCachedTopics {
		clear(p.counts)
	}
	p.counts[topic] = partitionCount{n: n, read: time.Now()}
	p.mu.Unlock()
	return n, nil
}
