// Command convlist measures the conversation list of a user with 100,000
// conversations, next to the list script before its indexes in the same
// run, on the same data.
//
// The conversations are written through the real write path (Sequence,
// then ApplyInboxes); 2% of them mention the user, who is also in 3 large
// groups; 20 other users have 50 conversations each. Measured: the big
// user's list (first page and deep pages), the other users' list while the
// big user lists without pause, the commands Redis logged as slower than
// 5 ms meanwhile (SLOWLOG), and the one-off build of the list indexes for
// an inbox written before them.
//
//	go run ./bench/convlist [--scale full|small|0.2] [--samples 200] [--json]
package main

import (
	"context"
	"flag"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

type options struct {
	samples         int
	baselineSamples int
}

func main() {
	var o options
	f := harness.Parse("convlist", harness.ScaleFull, func(fs *flag.FlagSet) {
		fs.IntVar(&o.samples, "samples", 300, "list calls measured per phase")
		fs.IntVar(&o.baselineSamples, "baseline-samples", 20, "list calls measured per phase of the baseline (each scans the inbox)")
	})
	harness.RunOnStack("convlist", f, harness.Needs{},
		func(ctx context.Context, log *harness.Log, st *harness.Stack) error { return run(ctx, f, o, log, st) })
}
