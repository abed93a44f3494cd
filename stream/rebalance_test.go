package stream

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

func TestRunner_MemberJoiningAndLeavingMidStreamLosesAndRepeatsNothing(t *testing.T) {
	const partitions, chunks, perChunk = 4, 30, 20
	_, addrs := testenv.Kafka(t, partitions, "in", "dead")
	adm := admin(t, addrs)

	// One in-flight counter per partition, shared by both members: a
	// partition handled by two members at once means a rebalance happened
	// in the middle of a Handle call.
	var inFlight [partitions]atomic.Int32
	var overlapped atomic.Bool
	handler := func(j *journal) Handler {
		return HandlerFunc(func(_ context.Context, recs []*kgo.Record) ([]DeadLetter, error) {
			p := recs[0].Partition
			if inFlight[p].Add(1) > 1 {
				overlapped.Store(true)
			}
			defer inFlight[p].Add(-1)
			time.Sleep(time.Millisecond)
			j.add(recs)
			return nil, nil
		})
	}

	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := range chunks {
			if err := produceRecords(addrs, "in", fmt.Sprint("c", i), perChunk); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	// No periodic commits: the positions move only by the commits on revoke
	// and on shutdown, which are what this test is about.
	reg := prometheus.NewRegistry() // both members register on it
	cfgA := testConfig(t, addrs, "flow", "in")
	cfgA.Metrics = reg
	cfgA.CommitInterval = time.Hour
	var a, b journal
	ra := start(t, cfgA, handler(&a))
	eventually(t, 5*time.Second, "member A handles records", func() bool { return a.records() >= 100 })

	cfgB := cfgA
	cfgB.ClientID = "member-b"
	rb := start(t, cfgB, handler(&b))
	eventually(t, 5*time.Second, "member B gets partitions and handles records", func() bool { return b.records() >= 50 })
	rb.stop(t)
	<-produced

	end := ends(t, adm, "in")
	handled := func() (seen map[int32]map[int64]int, missing int) {
		seen = map[int32]map[int64]int{}
		for _, j := range []*journal{&a, &b} {
			for p, offs := range j.offsets() {
				if seen[p] == nil {
					seen[p] = map[int64]int{}
				}
				for _, o := range offs {
					seen[p][o]++
				}
			}
		}
		for p := int32(0); p < partitions; p++ {
			for o := int64(0); o < end[p]; o++ {
				if seen[p][o] == 0 {
					missing++
				}
			}
		}
		return seen, missing
	}
	eventually(t, 8*time.Second, "every produced record is handled", func() bool {
		_, missing := handled()
		return missing == 0
	})
	ra.stop(t)
	if got := committed(t, adm, "flow", "in"); len(got) != len(end) {
		t.Errorf("committed %v, want the end %v", got, end)
	} else {
		for p, e := range end {
			if got[p] != e {
				t.Errorf("partition %d committed at %d, want the end %d", p, got[p], e)
			}
		}
	}
	seen, _ := handled()
	dups := 0
	for p := range seen {
		for _, n := range seen[p] {
			dups += n - 1
		}
	}
	// Finished work was committed when partitions moved, so the next owner
	// started where the last one stopped.
	if dups != 0 {
		t.Errorf("%d records handled twice: work finished before a revoke was not committed", dups)
	}
	if overlapped.Load() {
		t.Error("one partition was handled by two members at the same time")
	}
}

func TestRunner_RetryingHandlerDoesNotHoldUpARebalance(t *testing.T) {
	_, addrs := testenv.Kafka(t, 2, "in", "dead")
	adm := admin(t, addrs)
	produce(t, addrs, "in", "m", 20)

	// A fails every batch until B has handled something, which B can only
	// do once the group rebalanced around A's retry loop. The rebalance
	// timeout is far above the test's deadline: waiting it out fails.
	var bHandled atomic.Bool
	var a, b journal
	cfgA := testConfig(t, addrs, "stuck", "in")
	cfgA.ExtraOpts = append(cfgA.ExtraOpts, kgo.RebalanceTimeout(60*time.Second))
	start(t, cfgA, HandlerFunc(func(_ context.Context, recs []*kgo.Record) ([]DeadLetter, error) {
		if !bHandled.Load() {
			return nil, errors.New("store down")
		}
		a.add(recs)
		return nil, nil
	}))
	time.Sleep(200 * time.Millisecond) // A owns both partitions and retries
	cfgB := cfgA
	cfgB.ClientID = "member-b"
	start(t, cfgB, HandlerFunc(func(_ context.Context, recs []*kgo.Record) ([]DeadLetter, error) {
		b.add(recs)
		bHandled.Store(true)
		return nil, nil
	}))
	eventually(t, 8*time.Second, "B handles records while A's handler is still failing", bHandled.Load)
	waitCommittedToEnd(t, adm, "stuck", "in")

	// Every record was handled, and each partition in offset order by
	// whichever member owned it: A's rewound batches came back whole.
	end := ends(t, adm, "in")
	for p := int32(0); p < 2; p++ {
		var all []int64
		all = append(all, a.offsets()[p]...)
		all = append(all, b.offsets()[p]...)
		have := map[int64]bool{}
		for _, o := range all {
			have[o] = true
		}
		for o := int64(0); o < end[p]; o++ {
			if !have[o] {
				t.Errorf("partition %d offset %d never handled (A %v, B %v)", p, o, a.offsets()[p], b.offsets()[p])
			}
		}
		for _, offs := range [][]int64{a.offsets()[p], b.offsets()[p]} {
			for i := 1; i < len(offs); i++ {
				if offs[i] <= offs[i-1] {
					t.Errorf("partition %d handled out of order by one member: %v", p, offs)
					break
				}
			}
		}
	}
}
