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
//	go run ./bench/vip [--scale full|small|0.2] [--json]
package main

import (
	"context"
	"flag"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

type options struct {
	partitions int
	samples    int
}

func main() {
	var o options
	f := harness.Parse("vip", harness.ScaleFull, func(fs *flag.FlagSet) {
		fs.IntVar(&o.partitions, "partitions", 8, "partitions of each topic (embedded Kafka)")
		fs.IntVar(&o.samples, "samples", 100, "repetitions of the conversation list and of the first sync for their P99")
	})
	harness.Run("vip", func(ctx context.Context) error { return run(ctx, f, o) })
}

func run(ctx context.Context, f *harness.Flags, o options) error {
	log := harness.NewLog()
	st, err := harness.StartStack(ctx, f, harness.Needs{Kafka: true, Partitions: int32(o.partitions)}, log)
	if err != nil {
		return err
	}
	defer st.Stop()
	sc := buildScenario(f)
	log.Printf("scenario: %d groups, %d direct conversations, %d messages (%d direct, %d mentions of the VIP), %d body bytes",
		len(sc.groups), directConvs, len(sc.msgs), sc.direct, len(sc.mentions), sc.bodyBytes)
	r := &runner{f: f, o: o, st: st, log: log, sc: sc,
		res: &result{Benchmark: "vip", Scale: f.Scale, Machine: harness.ThisMachine(), Bodies: harness.BodyDescription,
			Embedded: st.Embedded}}
	if err := r.seed(ctx); err != nil {
		return err
	}
	defer r.stop()
	if err := r.measureOurs(ctx); err != nil {
		return err
	}
	if err := r.measureMemory(ctx); err != nil {
		return err
	}
	if err := r.measureBaseline(ctx); err != nil {
		return err
	}
	r.res.finish()
	r.res.Table = printTable(r.res)
	return harness.EmitJSON(f.JSON, r.res)
}
