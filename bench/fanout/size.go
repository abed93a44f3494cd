package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/bench/internal/naive"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/workers/fanout"
)

// sizeResult is the outcome for one group size.
type sizeResult struct {
	Members                   int     `json:"members"`
	Groups                    int     `json:"groups"`
	Messages                  int     `json:"messages"`
	Deliveries                int64   `json:"deliveries"`
	LargePath                 bool    `json:"large_path"`
	Seconds                   float64 `json:"seconds"`
	DeliveriesPerSec          float64 `json:"deliveries_per_sec"`
	MessagesPerSec            float64 `json:"messages_per_sec"`
	RedisCallsPerMessage      float64 `json:"redis_calls_per_message"`
	RedisRoundTripsPerMessage float64 `json:"redis_roundtrips_per_message"`
	MergeSizeAvg              float64 `json:"merge_size_avg"`
	// The records of one conversation in one poll merge with each other
	// only: of n of them, ceil(n/merge size) sequencing calls are the
	// fewest. MergeSizeBestAvg is the average those fewest calls would
	// have; MergesOverLimit the calls that merged more than the limit.
	SequencingCalls       uint64  `json:"sequencing_calls"`
	FewestSequencingCalls int     `json:"fewest_sequencing_calls"`
	MergeSizeBestAvg      float64 `json:"merge_size_best_avg"`
	MergesOverLimit       uint64  `json:"merges_over_limit"`
	InboxEventsPerCall    float64 `json:"inbox_events_per_call"`
	FailedHandleCalls     int64   `json:"failed_handle_calls"`
	SequencedOK           bool    `json:"sequenced_ok"`
	// The same worker with one inbox script call per recipient per merge
	// batch (redisstore.Config.InboxesPerCall 1), on its own groups.
	PerRecipientDeliveriesPerSec     float64 `json:"per_recipient_deliveries_per_sec"`
	PerRecipientRedisCallsPerMessage float64 `json:"per_recipient_redis_calls_per_message"`
	PerRecipientDeliveriesPerRawOp   float64 `json:"per_recipient_deliveries_per_raw_op"`
	NaiveMessages                    int     `json:"naive_messages"`
	NaiveDeliveries                  int64   `json:"naive_deliveries"`
	NaiveSeconds                     float64 `json:"naive_seconds"`
	NaiveDeliveriesPerSec            float64 `json:"naive_deliveries_per_sec"`
	NaiveRedisCallsPerMessage        float64 `json:"naive_redis_calls_per_message"`
	Speedup                          float64 `json:"speedup"`
	DeliveriesPerRawOp               float64 `json:"deliveries_per_raw_op"`
	NaiveDeliveriesPerRawOp          float64 `json:"naive_deliveries_per_raw_op"`
}

// bench is one run's shared state.
type bench struct {
	f        *harness.Flags
	o        options
	st       *harness.Stack
	log      *harness.Log
	bodies   *harness.Bodies
	producer *kgo.Client
}

// workload is the groups of one size and their messages.
type workload struct {
	size    int
	convs   []string
	members map[string][]string
	joins   []*schemas.Message
	msgs    []*schemas.Message
}

// groupsFor is how many groups of a size run at once, and how many
// messages each gets at full scale.
func groupsFor(size int) (groups, perGroup int) {
	switch {
	case size <= 100:
		return 100, 100
	case size <= 1000:
		return 20, 200
	default:
		return 4, 500
	}
}

// makeWorkload builds the groups of one size (overlapping members drawn
// from a pool twice the group size) and their messages, interleaved
// across groups as concurrent traffic would be.
func (b *bench) makeWorkload(size int, tag string) *workload {
	groups, perGroup := groupsFor(size)
	perGroup = b.f.Scaled(perGroup, 20)
	w := &workload{size: size, members: map[string][]string{}}
	pool := 2 * size
	for g := range groups {
		conv := fmt.Sprintf("fo%s%dg%d", tag, size, g)
		w.convs = append(w.convs, conv)
		mem := make([]string, size)
		for k := range mem {
			mem[k] = fmt.Sprintf("fo%s%du%d", tag, size, (g*size/2+k)%pool)
		}
		w.members[conv] = mem
		// A join names at most schemas.DefaultMaxRecipients users: a larger
		// group is founded by its first join and grown by the next ones.
		for start := 0; start < len(mem); start += schemas.DefaultMaxRecipients {
			id := conv + "-join"
			if start > 0 {
				id = fmt.Sprintf("%s-join%d", conv, start)
			}
			w.joins = append(w.joins, &schemas.Message{ClientMsgId: id, ConvId: conv,
				ConvType: schemas.ConvType_CONV_TYPE_GROUP, Kind: schemas.Kind_KIND_MEMBER_JOIN,
				Sender: mem[0], Recipients: mem[start:min(start+schemas.DefaultMaxRecipients, len(mem))]})
		}
	}
	for range perGroup {
		for _, conv := range w.convs {
			mem := w.members[conv]
			m := &schemas.Message{ClientMsgId: b.bodies.UUID(), ConvId: conv,
				ConvType: schemas.ConvType_CONV_TYPE_GROUP, Kind: schemas.Kind_KIND_MESSAGE,
				Sender: mem[b.bodies.Intn(size)], ContentType: "text/plain", Body: b.bodies.Next(),
				SendTimeMs: time.Now().UnixMilli()}
			if b.bodies.Intn(50) == 0 {
				m.Mentions = []string{mem[b.bodies.Intn(size)]}
			}
			w.msgs = append(w.msgs, m)
		}
	}
	return w
}

// measureSize runs ours, ours with a script call per recipient, and the
// naive writer on groups of one size.
func (b *bench) measureSize(ctx context.Context, size int, raw float64) (sizeResult, error) {
	w := b.makeWorkload(size, "")
	sr := sizeResult{Members: size, Groups: len(w.convs), Messages: len(w.msgs),
		Deliveries: int64(len(w.msgs)) * int64(size-1), LargePath: size > redisstore.DefaultLargeGroupThreshold}
	b.log.Printf("groups of %d: %d groups, %d messages, %d deliveries", size, len(w.convs), len(w.msgs), sr.Deliveries)
	ok, err := b.run(ctx, w, redisstore.Config{Prefix: b.f.Prefix}, &sr)
	if err != nil {
		return sr, err
	}
	sr.SequencedOK = ok
	b.log.Printf("groups of %d: the same with one inbox script call per recipient", size)
	per := sizeResult{Messages: len(w.msgs), Deliveries: sr.Deliveries}
	ok, err = b.run(ctx, b.makeWorkload(size, "p"), redisstore.Config{Prefix: b.f.Prefix, InboxesPerCall: 1}, &per)
	if err != nil {
		return sr, err
	}
	sr.SequencedOK = sr.SequencedOK && ok
	sr.PerRecipientDeliveriesPerSec = per.DeliveriesPerSec
	sr.PerRecipientRedisCallsPerMessage = per.RedisCallsPerMessage
	sr.PerRecipientDeliveriesPerRawOp = harness.Round(harness.Ratio(per.DeliveriesPerSec, raw), 3)
	if err := b.naive(ctx, w, &sr); err != nil {
		return sr, err
	}
	sr.Speedup = harness.Round(harness.Ratio(sr.DeliveriesPerSec, sr.NaiveDeliveriesPerSec), 2)
	sr.DeliveriesPerRawOp = harness.Round(harness.Ratio(sr.DeliveriesPerSec, raw), 3)
	sr.NaiveDeliveriesPerRawOp = harness.Round(harness.Ratio(sr.NaiveDeliveriesPerSec, raw), 3)
	b.log.Printf("groups of %d: ours %.0f deliveries/s, a call per recipient %.0f, naive %.0f, speedup %.1fx", size,
		sr.DeliveriesPerSec, sr.PerRecipientDeliveriesPerSec, sr.NaiveDeliveriesPerSec, sr.Speedup)
	return sr, nil
}

// run creates the workload's groups, then times its messages through a
// fanout worker on a store of cfg; it reports whether every group's seq
// came out right.
func (b *bench) run(ctx context.Context, w *workload, cfg redisstore.Config, sr *sizeResult) (bool, error) {
	if err := b.pipeline(ctx, w.joins, "joins", cfg, nil); err != nil {
		return false, err
	}
	if err := b.pipeline(ctx, w.msgs, "messages", cfg, sr); err != nil {
		return false, err
	}
	return b.checkSequenced(ctx, w)
}

// pipeline produces msgs while no worker runs, then lets one fanout
// worker drain them; with sr set, it records the timed figures.
func (b *bench) pipeline(ctx context.Context, msgs []*schemas.Message, what string, cfg redisstore.Config, sr *sizeResult) error {
	if err := harness.Produce(ctx, b.producer, msgs); err != nil {
		return err
	}
	fo, err := harness.StartFanout(b.st, fanout.Config{Store: cfg})
	if err != nil {
		return err
	}
	defer fo.Stop()
	if err := fo.WaitHandled(ctx, int64(len(msgs)), what, b.log); err != nil {
		return err
	}
	if sr == nil {
		return nil
	}
	busy := fo.Busy()
	cmds, trips := fo.Calls.Snapshot()
	n, sum, err := fo.MergeSizes("sequence")
	if err != nil {
		return err
	}
	in, inSum, err := fo.MergeSizes("inbox")
	if err != nil {
		return err
	}
	sr.Seconds = harness.Round(busy.Seconds(), 3)
	sr.DeliveriesPerSec = harness.Round(float64(sr.Deliveries)/busy.Seconds(), 0)
	sr.MessagesPerSec = harness.Round(float64(sr.Messages)/busy.Seconds(), 0)
	sr.RedisCallsPerMessage = harness.Round(float64(cmds)/float64(sr.Messages), 3)
	sr.RedisRoundTripsPerMessage = harness.Round(float64(trips)/float64(sr.Messages), 4)
	sr.MergeSizeAvg = harness.Round(harness.Ratio(sum, float64(n)), 2)
	within, err := fo.MergedAtMost("sequence", fanout.DefaultMergeSize)
	if err != nil {
		return err
	}
	sr.SequencingCalls, sr.MergesOverLimit = n, n-within
	sr.FewestSequencingCalls = fo.FewestBatches(fanout.DefaultMergeSize)
	sr.MergeSizeBestAvg = harness.Round(harness.Ratio(sum, float64(sr.FewestSequencingCalls)), 2)
	sr.InboxEventsPerCall = harness.Round(harness.Ratio(inSum, float64(in)), 2)
	sr.FailedHandleCalls = fo.Failed()
	return nil
}

// checkSequenced confirms every group's seq is its join plus its messages.
func (b *bench) checkSequenced(ctx context.Context, w *workload) (bool, error) {
	keys := redisstore.Keys{Prefix: b.f.Prefix}
	want := 1 + len(w.msgs)/len(w.convs)
	for _, conv := range w.convs {
		seq, err := b.st.Redis.HGet(ctx, keys.ConvMeta(conv), "seq").Int()
		if err != nil {
			return false, fmt.Errorf("read seq of %s: %w", conv, err)
		}
		if seq != want {
			b.log.Printf("WARNING: %s has seq %d, want %d", conv, seq, want)
			return false, nil
		}
	}
	return true, nil
}

// naive runs the one-round-trip writer on the first messages of the
// workload, enough for about o.naiveWork deliveries at full scale.
func (b *bench) naive(ctx context.Context, w *workload, sr *sizeResult) error {
	budget := b.f.Scaled(b.o.naiveWork, 20000)
	n := min(len(w.msgs), max(len(w.convs), budget/(w.size-1)))
	msgs := w.msgs[:n]
	calls := &harness.CallCounter{}
	rdb := harness.NewCountedClient(b.st.RedisAddr, fanout.DefaultWorkers+fanout.DefaultConversations, calls)
	defer rdb.Close()
	flat := naive.NewFlat(rdb, "benchnaive:", fanout.DefaultWorkers)
	byConv := map[string][]*schemas.Message{}
	for _, m := range msgs {
		byConv[m.GetConvId()] = append(byConv[m.GetConvId()], m)
	}
	recipients := func(m *schemas.Message) []string {
		var out []string
		for _, u := range w.members[m.GetConvId()] {
			if u != m.GetSender() {
				out = append(out, u)
			}
		}
		return out
	}
	b.log.Printf("groups of %d: naive writer on %d messages", w.size, n)
	start := time.Now()
	err := forEachConv(byConv, fanout.DefaultConversations, func(ms []*schemas.Message) error {
		return flat.Deliver(ctx, ms, recipients)
	})
	elapsed := time.Since(start)
	if err != nil {
		return err
	}
	cmds, _ := calls.Snapshot()
	sr.NaiveMessages = n
	sr.NaiveDeliveries = int64(n) * int64(w.size-1)
	sr.NaiveSeconds = harness.Round(elapsed.Seconds(), 3)
	sr.NaiveDeliveriesPerSec = harness.Round(float64(sr.NaiveDeliveries)/elapsed.Seconds(), 0)
	sr.NaiveRedisCallsPerMessage = harness.Round(float64(cmds)/float64(n), 2)
	return nil
}

// forEachConv runs f on every conversation's messages, at most limit
// conversations at once; it returns the first error.
func forEachConv(byConv map[string][]*schemas.Message, limit int, f func([]*schemas.Message) error) error {
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, ms := range byConv {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(ms); err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}
