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

func TestRunner_MemberJoiningAndLeavingMidStreamLosesNothing(t *testing.T) {
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
			produce(t, addrs, "in", fmt.Sprint("c", i), perChunk)
			time.Sleep(20 * time.Millisecond)
		}
	}()

	reg := prometheus.NewRegistry() // both members register on it
	cfgA := testConfig(t, addrs, "flow", "in")
	cfgA.Metrics = reg
	var a, b journal
	start(t, cfgA, handler(&a))
	eventually(t, 5*time.Second, "member A handles records", func() bool { return a.records() >= 100 })

	cfgB := cfgA
	cfgB.ClientID = "member-b"
	rb := start(t, cfgB, handler(&b))
	eventually(t, 5*time.Second, "member B gets partitions and handles records", func() bool { return b.records() >= 50 })
	rb.stop(t)
	<-produced

	waitCommittedToEnd(t, adm, "flow", "in")
	end := ends(t, adm, "in")
	seen := map[int32]map[int64]int{}
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
	dups := 0
	for p := int32(0); p < partitions; p++ {
		for o := int64(0); o < end[p]; o++ {
			switch n := seen[p][o]; {
			case n == 0:
				t.Errorf("partition %d offset %d was never handled", p, o)
			case n > 1:
				dups += n - 1
			}
		}
	}
	if overlapped.Load() {
		t.Error("one partition was handled by two members at the same time")
	}
	t.Logf("%d records, %d handled twice across the rebalances", partitions*0+chunks*perChunk, dups)
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
