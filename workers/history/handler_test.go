package history_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/workers/history"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// storeAt opens a Store on addr, database db, migrated through the direct
// address when addr is a gate that is still shut.
func storeAt(t *testing.T, addr, db string) *chstore.Store {
	t.Helper()
	s, err := chstore.Open(context.Background(), chstore.Config{
		Addr: addr, Database: db, DialTimeout: 500 * time.Millisecond, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func migratedStore(t *testing.T) (*chstore.Store, string) {
	t.Helper()
	_, db := testenv.ClickHouse(t)
	s := storeAt(t, testenv.ClickHouseAddr(t), db)
	if err := s.Migrate(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return s, db
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// sequenced encodes n messages of conv with seqs 1..n as im.sequenced
// records at offsets from 0.
func sequenced(t *testing.T, conv string, n int) []*kgo.Record {
	t.Helper()
	var out []*kgo.Record
	for i := 1; i <= n; i++ {
		out = append(out, recordOf(t, int64(i-1), sequencedMessage(conv, uint64(i))))
	}
	return out
}

func sequencedMessage(conv string, seq uint64) *schemas.Sequenced {
	return &schemas.Sequenced{
		Seq: seq, Epoch: 1, WriteTimeMs: time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC).UnixMilli() + int64(seq),
		Message: &schemas.Message{
			ClientMsgId: fmt.Sprintf("m%d", seq), ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
			Sender: "u1", Kind: schemas.Kind_KIND_MESSAGE, Body: []byte(fmt.Sprintf("hello %d", seq)),
		},
	}
}

func recordOf(t *testing.T, offset int64, m proto.Message) *kgo.Record {
	t.Helper()
	v, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return &kgo.Record{Topic: schemas.TopicSequenced, Partition: 0, Offset: offset, Value: v}
}

func TestHandleDeadLettersWhatCannotBeStoredAndInsertsTheRest(t *testing.T) {
	store, _ := migratedStore(t)
	h, err := history.New(history.Config{Logger: quiet}, store)
	if err != nil {
		t.Fatal(err)
	}
	good := sequenced(t, "g1", 6)
	unknownKind := sequencedMessage("g1", 99)
	unknownKind.Message.Kind = 42
	noSeq := sequencedMessage("g1", 0)
	bad := map[string]*kgo.Record{
		"does not decode":      {Topic: schemas.TopicSequenced, Offset: 100, Value: []byte{0xff, 0xff, 0xff}},
		"has no seq":           recordOf(t, 101, noSeq),
		"kind 42 has no value": recordOf(t, 102, unknownKind),
	}
	records := append([]*kgo.Record{}, good[:3]...)
	for _, r := range bad {
		records = append(records, r)
	}
	records = append(records, good[3:]...)

	dead, err := h.Handle(testCtx(t), records)
	if err != nil {
		t.Fatalf("Handle = %v, want nil", err)
	}
	if len(dead) != len(bad) {
		t.Fatalf("dead letters = %d, want %d", len(dead), len(bad))
	}
	for _, d := range dead {
		if d.Reason == "" || !strings.HasPrefix(d.Reason, "history: ") {
			t.Errorf("dead letter of offset %d has reason %q, want one naming the worker", d.Record.Offset, d.Reason)
		}
	}
	if n, err := store.CountMessages(testCtx(t), "g1"); err != nil || n != uint64(len(good)) {
		t.Fatalf("CountMessages = %d, %v; want %d", n, err, len(good))
	}
}

func TestHandleFailsWhileClickHouseIsUnreachableThenSucceeds(t *testing.T) {
	direct, db := migratedStore(t)
	g := newGate(t, testenv.ClickHouseAddr(t))
	reg := prometheus.NewRegistry()
	h, err := history.New(history.Config{Logger: quiet, Metrics: reg, MaxBatchRows: 4}, storeAt(t, g.addr, db))
	if err != nil {
		t.Fatal(err)
	}
	records := sequenced(t, "g2", 10)

	// Down: every attempt fails, so the runner would commit nothing.
	for attempt := range 2 {
		if _, err := h.Handle(testCtx(t), records); err == nil {
			t.Fatalf("attempt %d: Handle with ClickHouse unreachable = nil, want an error", attempt)
		}
	}
	if n, err := direct.CountMessages(testCtx(t), "g2"); err != nil || n != 0 {
		t.Fatalf("rows while down = %d, %v; want 0", n, err)
	}

	// Up again: the same records go in, 4 + 4 + 2.
	g.open(t)
	if _, err := h.Handle(testCtx(t), records); err != nil {
		t.Fatalf("Handle with ClickHouse back = %v, want nil", err)
	}
	page, hasMore, err := direct.History(testCtx(t), "g2", 0, 0, 20)
	if err != nil || hasMore || len(page) != 10 {
		t.Fatalf("History after recovery = %d messages, %v, %v; want 10", len(page), hasMore, err)
	}
	for i, m := range page {
		if want := sequencedMessage("g2", uint64(i+1)); !proto.Equal(m, want) {
			t.Fatalf("message %d = %v, want %v", i, m, want)
		}
	}
	if got := metric(t, reg, "offlinebox_history_rows_inserted_total").GetCounter().GetValue(); got != 10 {
		t.Errorf("rows inserted metric = %v, want 10", got)
	}
	if got := metric(t, reg, "offlinebox_history_insert_failures_total").GetCounter().GetValue(); got != 2 {
		t.Errorf("insert failures metric = %v, want 2", got)
	}
	if got := metric(t, reg, "offlinebox_history_insert_batch_rows").GetHistogram().GetSampleSum(); got != 10 {
		t.Errorf("batch rows observed = %v, want 10", got)
	}
	if got := metric(t, reg, "offlinebox_history_insert_batch_rows").GetHistogram().GetSampleCount(); got != 3 {
		t.Errorf("batch size observations = %d, want 3 inserts (4 + 4 + 2)", got)
	}
	if got := metric(t, reg, "offlinebox_history_insert_duration_seconds").GetHistogram().GetSampleCount(); got != 5 {
		t.Errorf("insert duration observations = %d, want 5 (2 failed + 3 accepted)", got)
	}
}

// metric returns the only series of a metric family.
func metric(t *testing.T, reg *prometheus.Registry, name string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0]
		}
	}
	t.Fatalf("metric %s not registered", name)
	return nil
}
