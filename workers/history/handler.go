package history

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
)

// Inserter stores sequenced records; *chstore.Store is one. InsertBatch
// must be all or nothing as far as the caller can tell: an error means the
// records may be inserted again, and inserting a record twice must be
// harmless.
type Inserter interface {
	InsertBatch(ctx context.Context, msgs []*schemas.Sequenced) error
}

// Handler sinks im.sequenced into ClickHouse. It implements stream.Handler.
type Handler struct {
	cfg     Config
	store   Inserter
	metrics *metrics
}

var _ stream.Handler = (*Handler)(nil)

// New returns a Handler writing to store.
func New(cfg Config, store Inserter) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if store == nil {
		return nil, fmt.Errorf("history: store is nil")
	}
	cfg = cfg.withDefaults()
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("history: register metrics: %w", err)
	}
	return &Handler{cfg: cfg, store: store, metrics: m}, nil
}

// Handle inserts the records of one partition's poll and returns nil only
// once ClickHouse accepted every row: only then may the runner commit.
// Records that can never be stored are returned as dead letters. Any failed
// INSERT fails the call, so the runner retries the same records; rows
// already inserted by an earlier chunk are inserted again, and readers
// collapse them.
func (h *Handler) Handle(ctx context.Context, records []*kgo.Record) ([]stream.DeadLetter, error) {
	var dead []stream.DeadLetter
	msgs := make([]*schemas.Sequenced, 0, len(records))
	sizes := make([]int, 0, len(records))
	for _, r := range records {
		m, err := schemas.DecodeSequenced(r.Value)
		if err == nil {
			err = chstore.CheckInsertable(m)
		}
		if err != nil {
			dead = append(dead, stream.DeadLetter{Record: r, Reason: "history: " + err.Error()})
			continue
		}
		msgs = append(msgs, m)
		sizes = append(sizes, len(r.Value))
	}
	for len(msgs) > 0 {
		n := h.chunk(sizes)
		if err := h.insert(ctx, msgs[:n]); err != nil {
			first := records[0]
			return nil, fmt.Errorf("history: %s partition %d from offset %d: %w",
				first.Topic, first.Partition, first.Offset, err)
		}
		msgs, sizes = msgs[n:], sizes[n:]
	}
	return dead, nil
}

// chunk returns how many of the next records go into one INSERT: at least
// one, at most MaxBatchRows, and no more than MaxBatchBytes of values.
func (h *Handler) chunk(sizes []int) int {
	n, bytes := 0, 0
	for n < len(sizes) && n < h.cfg.MaxBatchRows {
		if n > 0 && bytes+sizes[n] > h.cfg.MaxBatchBytes {
			break
		}
		bytes += sizes[n]
		n++
	}
	return n
}

func (h *Handler) insert(ctx context.Context, msgs []*schemas.Sequenced) error {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.InsertTimeout)
	defer cancel()
	start := time.Now()
	err := h.store.InsertBatch(ctx, msgs)
	h.metrics.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		h.metrics.failures.Inc()
		h.cfg.Logger.Warn("history insert failed; the runner retries", "rows", len(msgs), "err", err)
		return err
	}
	h.metrics.rows.Add(float64(len(msgs)))
	h.metrics.batchRows.Observe(float64(len(msgs)))
	return nil
}
