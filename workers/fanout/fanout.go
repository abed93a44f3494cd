package fanout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/alitto/pond/v2"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
)

// Producer sends records and waits for the broker's acknowledgement;
// *kgo.Client is one (stream.NewProducer returns a suitable client).
type Producer interface {
	ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults
}

// Fanout turns im.messages into sequenced timelines and inboxes. It
// implements stream.Handler and is safe for concurrent Handle calls of
// different partitions.
type Fanout struct {
	cfg      Config
	store    *redisstore.Store
	router   *redisstore.InboxRouter
	hotRDB   redis.UniversalClient // owned: closed by Close
	producer Producer
	metrics  *metrics
	hot      *hotMeter

	// convs works on conversations; chunks on recipient chunks, through a
	// sub-pool per conversation. Two pools, so a conversation task waiting
	// for its chunks never holds the slot a chunk needs.
	convs  pond.Pool
	chunks pond.Pool

	closeOnce sync.Once
}

var _ stream.Handler = (*Fanout)(nil)

// New returns a Fanout writing to rdb (standalone or cluster) and producing
// sequenced records through producer.
func New(cfg Config, rdb redis.UniversalClient, producer Producer) (*Fanout, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rdb == nil || producer == nil {
		return nil, errors.New("fanout: Redis client and producer are required")
	}
	cfg = cfg.withDefaults()
	store, err := redisstore.New(rdb, cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("fanout: %w", err)
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("fanout: register metrics: %w", err)
	}
	f := &Fanout{cfg: cfg, store: store, producer: producer, metrics: m,
		hot:    newHotMeter(cfg.HotWindow, cfg.HotFactor, cfg.HotMinWrites),
		convs:  pond.NewPool(cfg.Conversations),
		chunks: pond.NewPool(cfg.Workers)}
	var hotStore *redisstore.Store
	if cfg.HotRedisAddr != "" {
		if f.hotRDB, err = dialHot(cfg.HotRedisAddr); err != nil {
			f.Close()
			return nil, err
		}
		if hotStore, err = redisstore.New(f.hotRDB, cfg.Store); err != nil {
			f.Close()
			return nil, fmt.Errorf("fanout: hot store: %w", err)
		}
	}
	f.router = redisstore.NewInboxRouter(store, hotStore, cfg.RouterRefresh)
	return f, nil
}

// dialHot connects to the hot Redis: a redis:// URL, host:port, or several
// comma-separated host:port of a cluster.
func dialHot(addr string) (redis.UniversalClient, error) {
	if strings.HasPrefix(addr, "redis://") || strings.HasPrefix(addr, "rediss://") {
		opt, err := redis.ParseURL(addr)
		if err != nil {
			return nil, fmt.Errorf("fanout: HotRedisAddr: %w", err)
		}
		return redis.NewClient(opt), nil
	}
	return redis.NewUniversalClient(&redis.UniversalOptions{Addrs: strings.Split(addr, ",")}), nil
}

// Close stops the pools (after the tasks running) and closes the hot Redis
// client. It is idempotent; Handle must not be called after it.
func (f *Fanout) Close() {
	f.closeOnce.Do(func() {
		f.convs.StopAndWait()
		f.chunks.StopAndWait()
		if f.hotRDB != nil {
			_ = f.hotRDB.Close()
		}
	})
}

// Router is the user → store routing the worker writes with; the API must
// read with an equivalent one (same stores, same hot set).
func (f *Fanout) Router() *redisstore.InboxRouter { return f.router }

// Handle sequences the records of one partition, updates every recipient's
// inbox and produces the sequenced records, returning nil only when all of
// that is durable. Invalid records come back as dead letters; any store or
// broker failure fails the call so the runner retries the same records,
// which changes nothing that was already done.
func (f *Fanout) Handle(ctx context.Context, records []*kgo.Record) ([]stream.DeadLetter, error) {
	if err := f.router.Refresh(ctx, false); err != nil {
		return nil, err
	}
	batch := f.split(records)
	now := f.cfg.Clock().UnixMilli()
	results := make([]convResult, len(batch.order))
	g := f.convs.NewGroupContext(ctx)
	for i, conv := range batch.order {
		g.SubmitErr(func() error {
			var err error
			results[i], err = f.handleConv(ctx, conv, batch.byConv[conv], now)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	dead := batch.dead
	var out []*kgo.Record
	for _, r := range results {
		dead = append(dead, r.dead...)
		for _, sq := range r.sequenced {
			value, err := proto.Marshal(sq)
			if err != nil {
				return nil, fmt.Errorf("encode sequenced %s/%d: %w", sq.GetMessage().GetConvId(), sq.GetSeq(), err)
			}
			out = append(out, &kgo.Record{Topic: f.cfg.SequencedTopic,
				Key: []byte(sq.GetMessage().GetConvId()), Value: value})
		}
	}
	f.moveHotUsers(ctx, results)
	if err := f.produce(ctx, out); err != nil {
		return nil, err
	}
	f.metrics.rejected.Add(float64(len(dead)))
	return dead, nil
}

func (f *Fanout) produce(ctx context.Context, recs []*kgo.Record) error {
	if len(recs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.ProduceTimeout)
	defer cancel()
	if err := f.producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce %d sequenced records: %w", len(recs), err)
	}
	return nil
}

// pending is one decoded record waiting for its seq.
type pending struct {
	rec *kgo.Record
	msg *schemas.Message
}

// splitBatch is a partition's records by conversation, in first-seen order,
// each conversation's in offset order.
type splitBatch struct {
	order  []string
	byConv map[string][]pending
	dead   []stream.DeadLetter
}

// split decodes and validates the records. Invalid ones become dead
// letters; at-most-once messages are dropped (never stored).
func (f *Fanout) split(records []*kgo.Record) splitBatch {
	b := splitBatch{byConv: map[string][]pending{}}
	for _, r := range records {
		m, err := schemas.DecodeMessage(r.Value, f.cfg.MaxBodyBytes)
		if err == nil && !m.Stored() && m.GetKind() != schemas.Kind_KIND_MESSAGE {
			err = &schemas.InvalidError{Field: "qos", Reason: "a membership change cannot be at-most-once"}
		}
		if err != nil {
			b.dead = append(b.dead, stream.DeadLetter{Record: r, Reason: err.Error()})
			continue
		}
		if !m.Stored() {
			f.metrics.dropped.Inc()
			continue
		}
		conv := m.GetConvId()
		if _, ok := b.byConv[conv]; !ok {
			b.order = append(b.order, conv)
		}
		b.byConv[conv] = append(b.byConv[conv], pending{rec: r, msg: m})
	}
	return b
}
