// Command write measures the write path alone: a DM-heavy mix (70 %
// direct messages, 25 % in groups of 3–50, 5 % in groups of 500) through
// embedded Kafka (kfake) and the fanout worker into Redis, reporting
// messages/s, Redis's time per message by script (INFO commandstats
// deltas, split by the slowlog) and the fanout's CPU per message.
//
//	go run ./bench/write [--scale small|full|0.3] [--json] [-baseline-commit 8ac8aeb]
//
// Each kind of message is a phase of its own, so that Redis's time per
// message is that kind's. With a baseline, this program is built from the
// baseline's tree and runs as a second fanout (its own consumer group and
// key prefix) over the same records, in the same run.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

type options struct {
	messages       int
	partitions     int
	baseline       string
	baselineCommit string
}

func main() {
	if os.Getenv(childEnv) != "" {
		if err := runChild(); err != nil {
			fmt.Fprintln(os.Stderr, "write fanout child:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	f := harness.Parse("write", harness.ScaleFull, func(fs *flag.FlagSet) {
		fs.IntVar(&o.messages, "messages", 20000, "messages of the mix at full scale")
		fs.IntVar(&o.partitions, "partitions", 8, "partitions of im.messages (embedded Kafka)")
		fs.StringVar(&o.baseline, "baseline", "", "a write program built from the baseline tree, run as a second fanout over the same records")
		fs.StringVar(&o.baselineCommit, "baseline-commit", "", "build the baseline from this commit of the repository (this program's sources in that commit's tree)")
	})
	o.messages = f.Scaled(o.messages, 100)
	harness.Run("write", func(ctx context.Context) error {
		res, err := run(ctx, f, o)
		if err != nil {
			return err
		}
		res.Table = printTable(res)
		return harness.EmitJSON(f.JSON, res)
	})
}
