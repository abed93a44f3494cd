// Command history measures the history path: im.sequenced sunk into
// ClickHouse by the history worker (rows per second, next to the naive
// design of one INSERT per message), and roaming, the pages a client reads
// from ClickHouse through the API once it scrolls past the Redis window.
//
//	go run ./bench/history [--scale full|small|0.3] [--json]
//
// Messages first go through Kafka and the fanout worker (untimed), so that
// im.sequenced holds real sequenced records and Redis knows the members the
// API checks; the history worker then drains im.sequenced alone.
package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

type options struct {
	messages   int
	convs      int
	naiveRows  int
	samples    int
	pageLimit  int
	partitions int
}

type result struct {
	harness.Header
	Rows               int64         `json:"rows"`
	SinkSeconds        float64       `json:"sink_seconds"`
	RowsPerSec         float64       `json:"rows_per_sec"`
	InsertBatchRowsAvg float64       `json:"insert_batch_rows_avg"`
	RowsInClickHouse   uint64        `json:"rows_in_clickhouse"`
	NaiveRows          int           `json:"naive_rows"`
	NaiveRowsPerSec    float64       `json:"naive_rows_per_sec"`
	Speedup            float64       `json:"speedup"`
	PageLimit          int           `json:"page_limit"`
	RoamingPageP50MS   float64       `json:"roaming_page_p50_ms"`
	RoamingPageP99MS   float64       `json:"roaming_page_p99_ms"`
	RoamingPageBytes   float64       `json:"roaming_page_bytes_avg"`
	WindowPageP50MS    float64       `json:"redis_window_page_p50_ms"`
	WindowPageP99MS    float64       `json:"redis_window_page_p99_ms"`
	PagesIncomplete    int           `json:"roaming_pages_short"`
	Embedded           []string      `json:"embedded"`
	Table              []harness.Row `json:"table"`
	Notes              []string      `json:"notes"`
}

func main() {
	var o options
	f := harness.Parse("history", harness.ScaleFull, func(fs *flag.FlagSet) {
		fs.IntVar(&o.messages, "messages", 200000, "messages at full scale")
		fs.IntVar(&o.convs, "convs", 20, "conversations the messages are spread over")
		fs.IntVar(&o.naiveRows, "naive-rows", 300, "rows the naive one-INSERT-per-message sink writes at full scale")
		fs.IntVar(&o.samples, "samples", 300, "roaming pages read for the percentiles")
		fs.IntVar(&o.pageLimit, "page-limit", 50, "messages per roaming page (the API's default)")
		fs.IntVar(&o.partitions, "partitions", 8, "partitions of each topic (embedded Kafka)")
	})
	o.messages = f.Scaled(o.messages, 2000)
	o.naiveRows = f.Scaled(o.naiveRows, 50)
	harness.RunOnStack("history", f, harness.Needs{Kafka: true, ClickHouse: true, Partitions: int32(o.partitions)},
		func(ctx context.Context, log *harness.Log, st *harness.Stack) error { return run(ctx, f, o, log, st) })
}

func run(ctx context.Context, f *harness.Flags, o options, log *harness.Log, st *harness.Stack) error {
	res := &result{Header: harness.NewHeader("history", f.Scale),
		PageLimit: o.pageLimit, Embedded: st.Embedded}
	h := &hist{f: f, o: o, st: st, log: log, res: res}
	defer h.stop()
	steps := []func(context.Context) error{h.open, h.seed, h.sink, h.naive, h.roam}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	res.Speedup = harness.Round(harness.Ratio(res.RowsPerSec, res.NaiveRowsPerSec), 1)
	res.Notes = []string{
		"ours: the history worker (workers/history) on a stream runner drains im.sequenced after the fanout " +
			"filled it; one INSERT per partition per poll (MaxPollRecords 10000, fetch min 1 MiB / max wait 1 s); " +
			"rows_per_sec is rows over the time from the first Handle call to the end of the last",
		"naive: the same kind of rows, one INSERT per message, sequentially",
		"roaming: GET /v1/conversations/{conv}/history?before=X&limit=N through the API at random positions " +
			"(membership checked in Redis, page read from ClickHouse); the Redis window page is the same read " +
			"from /messages, for comparison",
	}
	res.Table = printTable(res)
	return harness.EmitJSON(f.JSON, res)
}

func printTable(r *result) []harness.Row {
	rows := []harness.Row{
		harness.Info("rows sunk", fmt.Sprint(r.Rows), fmt.Sprint(r.NaiveRows)),
		harness.Info("rows/s into ClickHouse", fmt.Sprintf("%.0f", r.RowsPerSec), fmt.Sprintf("%.0f", r.NaiveRowsPerSec)),
		harness.Info("speedup over one INSERT per message", fmt.Sprintf("%.0fx", r.Speedup), "1x"),
		harness.Info("rows per INSERT", fmt.Sprintf("%.0f", r.InsertBatchRowsAvg), "1"),
		harness.Check("rows readable (collapsed by seq)", fmt.Sprint(r.RowsInClickHouse), "", fmt.Sprint(r.Rows),
			int64(r.RowsInClickHouse) == r.Rows),
		harness.Info("roaming page P50", fmt.Sprintf("%.1f ms", r.RoamingPageP50MS), fmt.Sprintf("%.1f ms (Redis window)", r.WindowPageP50MS)),
		harness.Check("roaming page P99", fmt.Sprintf("%.1f ms", r.RoamingPageP99MS), fmt.Sprintf("%.1f ms (Redis window)", r.WindowPageP99MS),
			"<= 2000 ms (pull P99)", r.RoamingPageP99MS <= 2000),
		harness.Info("roaming page size avg", fmt.Sprintf("%.1f KB", r.RoamingPageBytes/1000), ""),
	}
	harness.PrintTable(fmt.Sprintf("history (scale %g)", r.Scale), rows)
	return rows
}
