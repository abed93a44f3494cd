package stream

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestOffsetState_TracksFinishedWorkOfOwnedPartitionsOnly(t *testing.T) {
	p0, p1 := topicPartition{"in", 0}, topicPartition{"in", 1}
	at := func(o int64) kgo.EpochOffset { return kgo.EpochOffset{Epoch: 1, Offset: o} }
	tests := []struct {
		name        string
		steps       func(s *offsetState)
		wantPending map[topicPartition]int64 // absent: nothing pending
		wantStalled map[topicPartition]int
	}{
		{
			name:        "finishing moves the pending offset forward",
			steps:       func(s *offsetState) { s.finish(p0, at(5)); s.finish(p0, at(9)) },
			wantPending: map[topicPartition]int64{p0: 9},
		},
		{
			name:        "a late, lower finish never moves it back",
			steps:       func(s *offsetState) { s.finish(p0, at(9)); s.finish(p0, at(5)) },
			wantPending: map[topicPartition]int64{p0: 9},
		},
		{
			name: "a lost or revoked partition has nothing left to commit",
			steps: func(s *offsetState) {
				s.finish(p0, at(3))
				s.finish(p1, at(4))
				s.stall(p0, 3, 7)
				s.forget(map[string][]int32{"in": {0}})
			},
			wantPending: map[topicPartition]int64{p1: 4},
		},
		{
			name:        "a stalled batch keeps its attempts until it finishes",
			steps:       func(s *offsetState) { s.stall(p0, 3, 2); s.stall(p1, 0, 5); s.finish(p1, at(8)) },
			wantPending: map[topicPartition]int64{p1: 8},
			wantStalled: map[topicPartition]int{p0: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newOffsetState()
			tt.steps(s)
			n := 0
			for topic, ps := range s.pending {
				for p, eo := range ps {
					n++
					tp := topicPartition{topic, p}
					if want, ok := tt.wantPending[tp]; !ok || eo.Offset != want {
						t.Errorf("pending %v = %d, want %v (present %v)", tp, eo.Offset, want, ok)
					}
				}
			}
			if n != len(tt.wantPending) {
				t.Errorf("pending has %d partitions, want %d: %v", n, len(tt.wantPending), s.pending)
			}
			for _, tp := range []topicPartition{p0, p1} {
				offset := s.stalled[tp].offset
				if got := s.stalledAttempts(tp, offset); got != tt.wantStalled[tp] {
					t.Errorf("stalled attempts of %v = %d, want %d", tp, got, tt.wantStalled[tp])
				}
			}
			if got := s.stalledAttempts(p0, 999); got != 0 {
				t.Errorf("attempts of a batch at another offset = %d, want 0 (a new batch starts afresh)", got)
			}
		})
	}
}
