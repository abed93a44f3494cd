package stream

import (
	"context"
	"maps"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicPartition names one partition.
type topicPartition struct {
	topic     string
	partition int32
}

// stall remembers how many times the batch starting at offset failed, so
// that its backoff goes on growing when a rebalance interrupted its retries
// and the same records come back in the next poll.
type stall struct {
	offset   int64
	attempts int
}

// offsetState is what the runner knows about its owned partitions: the
// offsets finished but not yet committed, and the batches still failing.
// The poll loop writes it between polls; the rebalance callbacks read and
// prune it from franz-go's group goroutine. mu is held across the commit
// request so that a revoke or loss cannot interleave with a commit.
type offsetState struct {
	mu      sync.Mutex
	pending map[string]map[int32]kgo.EpochOffset
	stalled map[topicPartition]stall
}

func newOffsetState() *offsetState {
	return &offsetState{
		pending: make(map[string]map[int32]kgo.EpochOffset),
		stalled: make(map[topicPartition]stall),
	}
}

// finish records that every record of tp before next.Offset is done.
func (s *offsetState) finish(tp topicPartition, next kgo.EpochOffset) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.stalled, tp)
	if s.pending[tp.topic] == nil {
		s.pending[tp.topic] = make(map[int32]kgo.EpochOffset)
	}
	if cur, ok := s.pending[tp.topic][tp.partition]; !ok || cur.Offset < next.Offset {
		s.pending[tp.topic][tp.partition] = next
	}
}

// stalledAttempts returns the failed attempts of the batch of tp starting
// at offset, or 0 if that batch never failed.
func (s *offsetState) stalledAttempts(tp topicPartition, offset int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.stalled[tp]; ok && st.offset == offset {
		return st.attempts
	}
	return 0
}

func (s *offsetState) stall(tp topicPartition, offset int64, attempts int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled[tp] = stall{offset: offset, attempts: attempts}
}

// forget drops everything known about the given partitions: they are no
// longer ours, and nothing of theirs may be committed from now on.
func (s *offsetState) forget(partitions map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for topic, ps := range partitions {
		for _, p := range ps {
			delete(s.pending[topic], p)
			delete(s.stalled, topicPartition{topic, p})
		}
		if len(s.pending[topic]) == 0 {
			delete(s.pending, topic)
		}
	}
}

// commit commits every pending offset synchronously. Offsets the broker
// refused stay pending for the next commit; the error is the first refusal.
func (s *offsetState) commit(ctx context.Context, cl *kgo.Client) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return nil
	}
	offsets := make(map[string]map[int32]kgo.EpochOffset, len(s.pending))
	for topic, ps := range s.pending {
		offsets[topic] = maps.Clone(ps)
	}
	var cerr error
	cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			cerr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					if cerr == nil {
						cerr = err
					}
					continue
				}
				if s.pending[t.Topic][p.Partition] == offsets[t.Topic][p.Partition] {
					delete(s.pending[t.Topic], p.Partition)
				}
			}
			if len(s.pending[t.Topic]) == 0 {
				delete(s.pending, t.Topic)
			}
		}
	})
	return cerr
}
