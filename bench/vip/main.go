// Command vip replays the founding scenario through the real pipeline and
// catches up as the user, next to the old design in the same run.
//
// A VIP is away 5 days: 32,000 group messages (28,000 in one noisy group of
// 10,000 members) and 800 direct messages pile up, 5 of the group messages
// @mention them, some early in the noisy group. The messages go through
// Kafka and the fanout worker into Redis; then the VIP's device, which was
// caught up before leaving, reads the conversation list, syncs, stores,
// acks and pages until it holds everything, over the HTTP API. The same
// messages are written to a naive flat inbox (one list per user, a pull
// returns everything in one box cut at 200 per conversation) and pulled.
//
// With -seal both (the default) the pipeline runs twice, on fresh stores:
// bodies in the clear, then sealed at rest (package seal); the result is
// the sealed run's, with the cost of sealing against the clear run.
//
//	go run ./bench/vip [--scale full|small|0.2] [--seal both|on|off] [--json]
package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

type options struct {
	partitions int
	samples    int
	seal       string
	before     string
}

func main() {
	var o options
	f := harness.Parse("vip", harness.ScaleFull, func(fs *flag.FlagSet) {
		fs.IntVar(&o.partitions, "partitions", 8, "partitions of each topic (embedded Kafka)")
		fs.IntVar(&o.samples, "samples", 100, "repetitions of the conversation list and of the first sync for their P99")
		fs.StringVar(&o.seal, "seal", "both", "bodies at rest: off (clear), on (sealed), both (clear, then sealed, and the cost)")
		fs.StringVar(&o.before, "before", "", "an earlier result (its --json line) whose catch-up figures to show beside this run's")
	})
	harness.Run("vip", func(ctx context.Context) error { return run(ctx, f, o) })
}

func run(ctx context.Context, f *harness.Flags, o options) error {
	modes := map[string][]bool{"off": {false}, "on": {true}, "both": {false, true}}[o.seal]
	if modes == nil {
		return fmt.Errorf("-seal: %q is not off, on or both", o.seal)
	}
	log := harness.NewLog()
	sc := buildScenario(f)
	log.Printf("scenario: %d groups, %d direct conversations, %d messages (%d direct, %d mentions of the VIP), %d body bytes",
		len(sc.groups), directConvs, len(sc.msgs), sc.direct, len(sc.mentions), sc.bodyBytes)
	var results []*result
	for i, sealed := range modes {
		res, err := runMode(ctx, f, o, log, sc, sealed, i == len(modes)-1)
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	res := results[len(results)-1]
	if len(results) == 2 {
		res.Sealing = sealingCostOf(results[0], res)
	}
	if o.before != "" {
		b, err := readBefore(o.before)
		if err != nil {
			return err
		}
		res.Before = b
	}
	res.finish()
	res.Table = printTable(res)
	return harness.EmitJSON(f.JSON, res)
}

// runMode runs the scenario on a fresh stack, bodies sealed or not; the
// baseline is measured in the last mode only.
func runMode(ctx context.Context, f *harness.Flags, o options, log *harness.Log, sc *scenario, sealed, baseline bool) (*result, error) {
	log.Printf("--- bodies %s", map[bool]string{false: "in the clear", true: "sealed at rest"}[sealed])
	mf := *f
	if sealed {
		mf.Prefix += "sealed:"
	}
	st, err := harness.StartStack(ctx, &mf, harness.Needs{Kafka: true, Partitions: int32(o.partitions)}, log)
	if err != nil {
		return nil, err
	}
	defer st.Stop()
	r := &runner{f: &mf, o: o, st: st, log: log, sc: sc,
		res: &result{Header: harness.NewHeader("vip", f.Scale),
			Embedded: st.Embedded, Sealed: sealed}}
	if sealed {
		if r.sealer, err = newBenchSealer(ctx, st, mf.Prefix); err != nil {
			return nil, err
		}
	}
	if err := r.seed(ctx); err != nil {
		return nil, err
	}
	defer r.stop()
	if err := r.measureOurs(ctx); err != nil {
		return nil, err
	}
	if err := r.measureMemory(ctx); err != nil {
		return nil, err
	}
	if baseline {
		if err := r.measureBaseline(ctx); err != nil {
			return nil, err
		}
	}
	return r.res, nil
}
