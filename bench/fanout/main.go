// Command fanout measures the write path: messages through the fanout worker
// (Kafka → sequencing → per-recipient inboxes in Redis → im.sequenced) for
// groups of 50, 500 and 5,000 members, next to the naive design (one round
// trip per message per recipient) and the machine's raw Redis limit, all in
// the same run on the same Redis.
//
//	go run ./bench/fanout [--scale small|full|0.3] [--json]
//
// Groups above the large-group threshold (2,000 members) take the large
// path: no per-member writes, unread derived at read time, so their
// deliveries are logical ones.
package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/workers/fanout"
)

type options struct {
	sizes      []int
	partitions int
	naiveWork  int
	rawSeconds float64
}

type result struct {
	harness.Header
	Partitions        int           `json:"partitions"`
	MergeSizeConfig   int           `json:"merge_size_config"`
	NaiveConcurrency  int           `json:"naive_concurrency"`
	RedisRawOpsPerSec float64       `json:"redis_raw_ops_per_sec"`
	Sizes             []sizeResult  `json:"sizes"`
	SpeedupAt500      float64       `json:"speedup_at_500,omitempty"`
	Embedded          []string      `json:"embedded"`
	Table             []harness.Row `json:"table"`
	Notes             []string      `json:"notes"`
}

func main() {
	var o options
	var sizes string
	f := harness.Parse("fanout", harness.ScaleSmall, func(fs *flag.FlagSet) {
		fs.StringVar(&sizes, "sizes", "50,500,5000", "group sizes to measure, comma separated")
		fs.IntVar(&o.partitions, "partitions", 8, "partitions of im.messages (embedded Kafka)")
		fs.IntVar(&o.naiveWork, "naive-deliveries", 300000, "deliveries the naive writer does per size at full scale")
		fs.Float64Var(&o.rawSeconds, "raw-seconds", 3, "how long the raw Redis limit is measured")
	})
	o.sizes = harness.Counts("fanout", "sizes", sizes, 2, "a group size of at least 2")
	harness.RunOnStack("fanout", f, harness.Needs{Kafka: true, Partitions: int32(o.partitions)},
		func(ctx context.Context, log *harness.Log, st *harness.Stack) error { return run(ctx, f, o, log, st) })
}

func run(ctx context.Context, f *harness.Flags, o options, log *harness.Log, st *harness.Stack) error {
	res := result{Header: harness.NewHeader("fanout", f.Scale),
		Partitions: o.partitions, MergeSizeConfig: fanout.DefaultMergeSize, NaiveConcurrency: fanout.DefaultWorkers,
		Embedded: st.Embedded}
	log.Printf("raw Redis limit: pipelined SETs for %.0fs", o.rawSeconds)
	var err error
	res.RedisRawOpsPerSec, err = harness.RawWriteRate(ctx, st.RedisAddr, f.Prefix, 4, time.Duration(o.rawSeconds*float64(time.Second)))
	if err != nil {
		return err
	}
	log.Printf("raw Redis limit: %.0f writes/s", res.RedisRawOpsPerSec)
	b := &bench{f: f, o: o, st: st, log: log, bodies: harness.NewBodies(f.Seed)}
	if b.producer, err = harness.NewProducer(st); err != nil {
		return err
	}
	defer b.producer.Close()
	for _, size := range o.sizes {
		sr, err := b.measureSize(ctx, size, res.RedisRawOpsPerSec)
		if err != nil {
			return fmt.Errorf("groups of %d: %w", size, err)
		}
		res.Sizes = append(res.Sizes, sr)
		if size == 500 {
			res.SpeedupAt500 = sr.Speedup
		}
	}
	res.Notes = notes(res)
	res.Table = printTable(res)
	return harness.EmitJSON(f.JSON, res)
}

func notes(res result) []string {
	return []string{
		"ours: messages pre-loaded in Kafka, then consumed by one fanout worker (stream runner, MaxPollRecords 2000, " +
			"merge 20, 16 conversations and 32 recipient-chunk tasks at once, at most 5 per conversation, chunks of 100 " +
			"recipients, each one inbox script call on this standalone Redis); the time runs from the first Handle " +
			"call to the end of the last and includes producing im.sequenced",
		"one inbox call per recipient: the same worker on groups of its own with redisstore InboxesPerCall 1, the " +
			"earlier design (a chunk of 100 recipients is 100 script calls in one pipeline), in the same run",
		"naive: the same messages from memory (no Kafka), per message one INCR, then one RPUSH of a full copy per " +
			"recipient, each a round trip, 32 in flight at once over 16 conversations at once",
		"deliveries = messages x (members - 1); for groups above the large-group threshold they are logical: " +
			"no per-member write is made",
		"merged per sequencing IO: records per sequencing call; a conversation's records merge within one poll " +
			"(MaxPollRecords over all partitions), so the best average is records / sum of ceil(records of a " +
			"conversation in a poll / 20), met when no call merged more than 20 and the calls were no more than that",
		"redis_calls_per_message counts commands sent (a script call is one), redis_roundtrips_per_message " +
			"counts network round trips (a pipeline is one)",
	}
}

func printTable(res result) []harness.Row {
	var rows []harness.Row
	for _, s := range res.Sizes {
		p := fmt.Sprintf("%d members: ", s.Members)
		rows = append(rows,
			harness.Info(p+"deliveries/s", fmt.Sprintf("%.0f", s.DeliveriesPerSec), fmt.Sprintf("%.0f", s.NaiveDeliveriesPerSec)),
			harness.Info(p+"redis calls/message", fmt.Sprintf("%.2f", s.RedisCallsPerMessage), fmt.Sprintf("%.2f", s.NaiveRedisCallsPerMessage)),
			harness.Info(p+"round trips/message", fmt.Sprintf("%.3f", s.RedisRoundTripsPerMessage), fmt.Sprintf("%.2f", s.NaiveRedisCallsPerMessage)),
			harness.Info(p+"merge size avg", fmt.Sprintf("%.1f", s.MergeSizeAvg), "1"))
		perRaw := fmt.Sprintf("%.2f", s.DeliveriesPerRawOp)
		if s.Members == 500 {
			rows = append(rows, harness.Check(p+"deliveries per raw op", perRaw, fmt.Sprintf("%.2f", s.NaiveDeliveriesPerRawOp),
				">= 1.5", s.DeliveriesPerRawOp >= 1.5))
		} else {
			rows = append(rows, harness.Info(p+"deliveries per raw op", perRaw, fmt.Sprintf("%.2f", s.NaiveDeliveriesPerRawOp)))
		}
		rows = append(rows,
			harness.Info(p+"one inbox call per recipient: deliveries/s", fmt.Sprintf("%.0f", s.PerRecipientDeliveriesPerSec), ""),
			harness.Info(p+"one inbox call per recipient: redis calls/message", fmt.Sprintf("%.2f", s.PerRecipientRedisCallsPerMessage), ""),
			harness.Info(p+"one inbox call per recipient: deliveries per raw op", fmt.Sprintf("%.2f", s.PerRecipientDeliveriesPerRawOp), ""))
		if s.Members == 500 {
			rows = append(rows, harness.Check(p+"speedup over naive", fmt.Sprintf("%.1fx", s.Speedup), "1x", ">= 5x", s.Speedup >= 5))
		} else {
			rows = append(rows, harness.Info(p+"speedup over naive", fmt.Sprintf("%.1fx", s.Speedup), "1x"))
		}
		// The merge is at most MergeSize records and takes every record of
		// a conversation that one poll brought: its best is what the polls
		// allow, 20 only when each poll held a multiple of 20 per group.
		rows = append(rows, harness.Check(p+"merged per sequencing IO", fmt.Sprintf("%.1f", s.MergeSizeAvg), "1",
			fmt.Sprintf("%.1f (the polls' best), each <= %d", s.MergeSizeBestAvg, res.MergeSizeConfig),
			s.SequencingCalls <= uint64(s.FewestSequencingCalls) && s.MergesOverLimit == 0))
	}
	rows = append(rows, harness.Info("raw Redis writes/s (pipelined SET)", fmt.Sprintf("%.0f", res.RedisRawOpsPerSec), ""))
	harness.PrintTable(fmt.Sprintf("fanout (scale %g)", res.Scale), rows)
	return rows
}
