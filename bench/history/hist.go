package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/topology"
	"github.com/offlinebox/offlinebox/workers/fanout"
	"github.com/offlinebox/offlinebox/workers/history"
)

const roamer = "roamer"

type hist struct {
	f   *harness.Flags
	o   options
	st  *harness.Stack
	log *harness.Log
	res *result

	store    *chstore.Store
	producer *kgo.Client
	convs    []string
	maxSeq   map[string]uint64
	sample   []*schemas.Sequenced
}

func (h *hist) stop() {
	if h.producer != nil {
		h.producer.Close()
	}
	if h.store != nil {
		_ = h.store.Close()
	}
}

func (h *hist) open(ctx context.Context) error {
	var err error
	if h.store, err = chstore.Open(ctx, chstore.Config{Addr: h.st.ClickHouseAddr, Database: "offlinebox_bench",
		Logger: harness.QuietLogger()}); err != nil {
		return err
	}
	if err := h.store.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	h.producer, err = harness.NewProducer(h.st)
	return err
}

// seed sends the messages through the fanout, so im.sequenced holds them
// sequenced and Redis knows the members.
func (h *hist) seed(ctx context.Context) error {
	b := harness.NewBodies(h.f.Seed)
	var msgs []*schemas.Message
	h.maxSeq = map[string]uint64{}
	for c := range h.o.convs {
		conv := fmt.Sprintf("hc%02d", c)
		h.convs = append(h.convs, conv)
		mem := []string{roamer, conv + "a", conv + "b", conv + "c", conv + "d"}
		msgs = append(msgs, &schemas.Message{ClientMsgId: b.UUID(), ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
			Kind: schemas.Kind_KIND_MEMBER_JOIN, Sender: roamer, Recipients: mem})
		h.maxSeq[conv] = 1
	}
	for i := range h.o.messages {
		conv := h.convs[i%len(h.convs)]
		msgs = append(msgs, &schemas.Message{ClientMsgId: b.UUID(), ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
			Kind: schemas.Kind_KIND_MESSAGE, Sender: fmt.Sprintf("%s%c", conv, 'a'+b.Intn(4)), ContentType: "text/plain",
			Body: b.Next(), SendTimeMs: time.Now().UnixMilli()})
		h.maxSeq[conv]++
	}
	h.res.Rows = int64(len(msgs))
	fo, err := harness.StartFanout(h.st, fanout.Config{Store: redisstore.Config{Prefix: h.f.Prefix}})
	if err != nil {
		return err
	}
	defer fo.Stop()
	h.log.Printf("seeding %d records through the fanout", len(msgs))
	if err := harness.Produce(ctx, h.producer, msgs); err != nil {
		return err
	}
	return fo.WaitHandled(ctx, int64(len(msgs)), "fanout", h.log)
}

// sink lets the history worker drain im.sequenced into ClickHouse.
func (h *hist) sink(ctx context.Context) error {
	reg := prometheus.NewRegistry()
	hd, err := history.New(history.Config{Logger: harness.QuietLogger(), Metrics: reg}, h.store)
	if err != nil {
		return err
	}
	stage, err := harness.StartStage(topology.History().RunnerConfig(h.st.Brokers), hd)
	if err != nil {
		return err
	}
	defer stage.Stop()
	h.log.Printf("history worker draining im.sequenced")
	if err := stage.WaitHandled(ctx, h.res.Rows, "history", h.log); err != nil {
		return err
	}
	busy := stage.Busy()
	h.res.SinkSeconds = harness.Round(busy.Seconds(), 3)
	h.res.RowsPerSec = harness.Round(float64(h.res.Rows)/busy.Seconds(), 0)
	n, sum, err := harness.Histogram(reg, "offlinebox_history_insert_batch_rows", "", "")
	if err != nil {
		return err
	}
	h.res.InsertBatchRowsAvg = harness.Round(harness.Ratio(sum, float64(n)), 1)
	for _, c := range h.convs {
		k, err := h.store.CountMessages(ctx, c)
		if err != nil {
			return err
		}
		h.res.RowsInClickHouse += k
	}
	h.log.Printf("sunk %d rows in %s: %.0f rows/s, %.0f rows per INSERT", h.res.Rows, busy.Round(time.Millisecond),
		h.res.RowsPerSec, h.res.InsertBatchRowsAvg)
	page, _, err := h.store.History(ctx, h.convs[0], 0, 0, chstore.MaxHistoryLimit)
	h.sample = page
	return err
}

// naive inserts rows one INSERT per message, as a sink without batching
// would; the rows are copies under conversations of their own.
func (h *hist) naive(ctx context.Context) error {
	if len(h.sample) == 0 {
		return fmt.Errorf("naive sink: no sample rows read back")
	}
	start := time.Now()
	for i := range h.o.naiveRows {
		src := h.sample[i%len(h.sample)]
		row := &schemas.Sequenced{Seq: uint64(i + 1), Epoch: src.GetEpoch(), WriteTimeMs: src.GetWriteTimeMs(),
			Message: &schemas.Message{ClientMsgId: src.GetMessage().GetClientMsgId(), ConvId: "naivehc",
				ConvType: src.GetMessage().GetConvType(), Kind: src.GetMessage().GetKind(), Sender: src.GetMessage().GetSender(),
				ContentType: src.GetMessage().GetContentType(), Body: src.GetMessage().GetBody()}}
		if err := h.store.InsertBatch(ctx, []*schemas.Sequenced{row}); err != nil {
			return fmt.Errorf("naive insert %d: %w", i, err)
		}
	}
	elapsed := time.Since(start)
	h.res.NaiveRows = h.o.naiveRows
	h.res.NaiveRowsPerSec = harness.Round(float64(h.o.naiveRows)/elapsed.Seconds(), 0)
	h.log.Printf("naive: %d single-row INSERTs, %.0f rows/s", h.o.naiveRows, h.res.NaiveRowsPerSec)
	return nil
}

// roam reads history pages at random positions through the API, and the
// same pages from the Redis window for comparison.
func (h *hist) roam(ctx context.Context) error {
	a, err := harness.StartAPI(h.st, harness.APIOptions{Prefix: h.f.Prefix, History: h.store})
	if err != nil {
		return err
	}
	defer a.Stop()
	tok, err := a.Token(roamer, "laptop")
	if err != nil {
		return err
	}
	c := client.New(a.URL, tok, nil)
	rng := rand.New(rand.NewPCG(uint64(h.f.Seed), 7))
	var roam, window []time.Duration
	var bytes int
	for range h.o.samples {
		conv := h.convs[rng.IntN(len(h.convs))]
		before := 2 + rng.Uint64N(h.maxSeq[conv])
		t0 := time.Now()
		p, n, err := c.History(ctx, conv, 0, before, h.o.pageLimit)
		if err != nil {
			return err
		}
		roam = append(roam, time.Since(t0))
		bytes += n
		if want := min(int(before-1), h.o.pageLimit); len(p.Messages) < want {
			h.res.PagesIncomplete++
		}
		t0 = time.Now()
		if _, _, err := c.PageBefore(ctx, conv, before, h.o.pageLimit); err != nil {
			return err
		}
		window = append(window, time.Since(t0))
	}
	h.res.RoamingPageP50MS, h.res.RoamingPageP99MS = harness.Percentile(roam, 50), harness.Percentile(roam, 99)
	h.res.WindowPageP50MS, h.res.WindowPageP99MS = harness.Percentile(window, 50), harness.Percentile(window, 99)
	h.res.RoamingPageBytes = harness.Round(float64(bytes)/float64(h.o.samples), 0)
	h.log.Printf("roaming pages: p50 %.1f ms, p99 %.1f ms (Redis window p99 %.1f ms)", h.res.RoamingPageP50MS,
		h.res.RoamingPageP99MS, h.res.WindowPageP99MS)
	return nil
}
