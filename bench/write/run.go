package main

import (
	"context"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/redisstore"
)

// slowlogEntries bounds the calls one drain may make and still be split
// by script.
const slowlogEntries = 500000

// side is one tree's fanout: ours or the baseline.
type side struct {
	name, exe, prefix string
	out               *sideResult
}

// run measures every phase on ours and on the baseline, in turn (the
// order swapped each phase).
func run(ctx context.Context, f *harness.Flags, o options) (*result, error) {
	log := harness.NewLog()
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	sides := []*side{{name: "ours", exe: exe, prefix: f.Prefix + "wours:", out: &sideResult{}}}
	base := o.baseline
	if o.baselineCommit != "" {
		dir, err := os.MkdirTemp("", "bench-write-baseline-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		log.Printf("building the baseline from %s", o.baselineCommit)
		if base, err = buildBaseline(ctx, o.baselineCommit, dir); err != nil {
			return nil, err
		}
	}
	if base != "" {
		sides = append(sides, &side{name: "baseline", exe: base, prefix: f.Prefix + "wbase:", out: &sideResult{}})
	}
	st, err := harness.StartStack(ctx, f, harness.Needs{Kafka: true, Partitions: int32(o.partitions)}, log)
	if err != nil {
		return nil, err
	}
	defer st.Stop()
	prod, err := harness.NewProducer(st)
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	for _, s := range sides {
		if err := createTopic(ctx, prod, sequencedTopic(groupOf(s)), int32(o.partitions)); err != nil {
			return nil, err
		}
	}
	w := makeWorkload(harness.NewBodies(f.Seed), o.messages)
	total := map[string]int{}
	for i, p := range []*phase{w.joins, w.direct, w.group, w.large} {
		log.Printf("%s: producing %d records", p.name, len(p.msgs))
		if err := harness.Produce(ctx, prod, p.msgs); err != nil {
			return nil, err
		}
		want := map[string]int{}
		for conv, n := range p.seqs {
			total[conv] += n
			want[conv] = total[conv]
		}
		order := append([]*side(nil), sides...)
		if i%2 == 1 && len(order) == 2 {
			order[0], order[1] = order[1], order[0]
		}
		for _, s := range order {
			if err := drainPhase(ctx, st, s, p, want, log); err != nil {
				return nil, fmt.Errorf("%s, %s: %w", p.name, s.name, err)
			}
		}
	}
	res := &result{Benchmark: "write", Scale: f.Scale, Machine: harness.ThisMachine(), Bodies: harness.BodyDescription,
		Partitions: o.partitions, Messages: len(w.direct.msgs) + len(w.group.msgs) + len(w.large.msgs), Embedded: st.Embedded}
	res.fill(sides[0].out)
	if len(sides) == 2 {
		res.Baseline = o.baselineCommit
		if res.Baseline == "" {
			res.Baseline = o.baseline
		}
		res.BaselineResult = sides[1].out
		sides[1].out.totals()
	}
	res.Notes = notes()
	return res, nil
}

// drainPhase runs s's fanout over the phase's records and records what
// Redis and the fanout spent on them.
func drainPhase(ctx context.Context, st *harness.Stack, s *side, p *phase, want map[string]int, log *harness.Log) error {
	log.Printf("%s: %s fanout over %d records", p.name, s.name, len(p.msgs))
	if err := startSlowlog(ctx, st.Redis, slowlogEntries); err != nil {
		return err
	}
	before, err := commandUsec(ctx, st.Redis)
	if err != nil {
		return err
	}
	cr, err := drain(ctx, s.exe, st, groupOf(s), s.prefix, len(p.msgs))
	if err != nil {
		return err
	}
	after, err := commandUsec(ctx, st.Redis)
	if err != nil {
		return err
	}
	split, complete, err := scriptSplit(ctx, st.Redis, slowlogEntries)
	if err != nil {
		return err
	}
	bad, err := checkSeqs(ctx, st, s.prefix, want)
	if err != nil {
		return err
	}
	if !p.timed {
		if bad > 0 {
			return fmt.Errorf("%d groups not founded as their joins say", bad)
		}
		return nil
	}
	pr := phaseOf(p, cr, before, after, split, complete, bad)
	log.Printf("%s: %s %.0f messages/s, Redis %.1f µs/message in scripts, fanout CPU %.3f ms/message",
		p.name, s.name, pr.MessagesPerSec, pr.RedisScriptUSPerMessage, pr.FanoutCPUMSPerMessage)
	s.out.Phases = append(s.out.Phases, pr)
	return nil
}

// groupOf is the consumer group of a side's fanout.
func groupOf(s *side) string { return "bench-write-" + s.name }

// createTopic creates a side's changelog topic.
func createTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32) error {
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	return nil
}

// checkSeqs counts the conversations whose seq is not the one want gives
// (one per record so far: none lost, none sequenced twice).
func checkSeqs(ctx context.Context, st *harness.Stack, prefix string, want map[string]int) (int, error) {
	keys := redisstore.Keys{Prefix: prefix}
	bad := 0
	for conv, n := range want {
		seq, err := st.Redis.HGet(ctx, keys.ConvMeta(conv), "seq").Int()
		if err != nil {
			return 0, fmt.Errorf("read seq of %s: %w", conv, err)
		}
		if seq != n {
			bad++
		}
	}
	return bad, nil
}
