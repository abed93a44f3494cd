package fanout

import (
	"context"
	"errors"
	"fmt"
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
	producer Producer
	metrics  *metrics
	hot      *hotMeter
	hotStore *redisstore.Store // nil without a hot Redis

	// restore holds every batch until each Redis server is verified
	// against im.sequenced (restore.go).
	restore        *restorer
	restoreMetrics *restoreMetrics
	// fwd sends records read from a partition their conversation does
	// not hash to on to the one it does (forward.go).
	fwd *forwarder

	// convs works on conversations; chunks on recipient chunks, through a
	// sub-pool per conversation. Two pools, so a conversation task waiting
	// for its chunks never holds the slot a chunk needs.
	convs  pond.Pool
	chunks pond.Pool

	closeOnce sync.Once
}

var _ stream.Handler = (*Fanout)(nil)

// New returns a Fanout writing to rdb (standalone or cluster), hot users'
// keys to cfg.HotRedis, and producing sequenced records through producer.
func New(cfg Config, rdb redis.UniversalClient, producer Producer) (*Fanout, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rdb == nil || producer == nil {
		return nil, errors.New("fanout: Redis client and producer are required")
	}
	cfg = cfg.withDefaults()
	fence := redisstore.NewFence()
	cfg.Store.Fence = fence
	store, err := redisstore.New(rdb, cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("fanout: %w", err)
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("fanout: register metrics: %w", err)
	}
	rm, err := newRestoreMetrics(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("fanout: register metrics: %w", err)
	}
	f := &Fanout{cfg: cfg, store: store, producer: producer, metrics: m, restoreMetrics: rm,
		hot:    newHotMeter(cfg.HotWindow, cfg.HotFactor, cfg.HotMinWrites),
		convs:  pond.NewPool(cfg.Conversations),
		chunks: pond.NewPool(cfg.Workers)}
	if cfg.HotRedis != nil {
		if f.hotStore, err = redisstore.New(cfg.HotRedis, cfg.Store); err != nil {
			f.Close()
			return nil, fmt.Errorf("fanout: hot store: %w", err)
		}
	}
	if f.fwd, err = newForwarder(cfg.Brokers); err != nil {
		f.Close()
		return nil, fmt.Errorf("fanout: %w", err)
	}
	f.router = redisstore.NewInboxRouter(store, f.hotStore, cfg.RouterRefresh)
	f.restore = newRestorer(f, fence)
	return f, nil
}

// Close stops the pools (after the tasks running). It is idempotent;
// Handle must not be called after it.
func (f *Fanout) Close() {
	f.closeOnce.Do(func() {
		f.convs.StopAndWait()
		f.chunks.StopAndWait()
		if f.fwd != nil {
			f.fwd.cl.Close()
		}
	})
}

// Handle sequences the records of one partition, updates every recipient's
// inbox and produces the sequenced records, returning nil only when all of
// that is durable. Invalid records (over schemas.Limits among them) come
// back as dead letters before they are sequenced, as do sequenced records
// the broker refuses for good (see refusedLetter) and records whose inbox
// update can never succeed for some recipients (see inboxLetters: the
// record still reaches the others and im.sequenced); any other store or
// broker failure fails the call so the runner retries the same records,
// which changes nothing that was already done.
func (f *Fanout) Handle(ctx context.Context, records []*kgo.Record) ([]stream.DeadLetter, error) {
	release, err := f.restore.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	dead, err := f.handle(ctx, records)
	f.restore.check(err)
	if err == nil && f.store.Config().Sealer != nil {
		digestBodies(dead)
	}
	return dead, err
}

func (f *Fanout) handle(ctx context.Context, records []*kgo.Record) ([]stream.DeadLetter, error) {
	batch, err := f.place(ctx, records)
	if err != nil {
		return nil, err
	}
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
	from := map[*kgo.Record]*kgo.Record{} // sequenced record → its source
	keys := dataKeys{store: f.store}
	keyless := 0 // records dead-lettered for a data key that can never be read
	for _, r := range results {
		dead = append(dead, r.dead...)
		for i, sq := range r.sequenced {
			never, err := keys.attach(ctx, sq)
			if err != nil {
				return nil, err
			}
			if never != nil {
				dead = append(dead, f.keylessLetter(r.sources[i], sq, never))
				keyless++
				continue
			}
			value, err := proto.Marshal(sq)
			if err != nil {
				return nil, fmt.Errorf("encode sequenced %s/%d: %w", sq.GetMessage().GetConvId(), sq.GetSeq(), err)
			}
			rec := &kgo.Record{Topic: f.cfg.SequencedTopic, Key: []byte(sq.GetMessage().GetConvId()), Value: value}
			out = append(out, rec)
			from[rec] = r.sources[i]
		}
	}
	f.moveHotUsers(ctx, results)
	refused, next, err := f.produce(ctx, out)
	if err != nil {
		return nil, err
	}
	for _, rf := range refused {
		dead = append(dead, f.refusedLetter(from[rf.rec], rf))
	}
	f.metrics.refused.Add(float64(len(refused)))
	// After the effects and their changelog records, before the commit:
	// what a restore may skip on each server.
	for _, st := range f.restore.stores() {
		if err := st.RaiseFence(ctx, next); err != nil {
			return nil, err
		}
	}
	f.metrics.rejected.Add(float64(len(dead)))
	if keyless > 0 {
		f.metrics.storeDead.WithLabelValues(deadDataKey).Add(float64(keyless))
	}
	for _, r := range results {
		countFailures(r.failures, f.metrics.storeDead, f.metrics.inboxDead)
	}
	return dead, nil
}

// refusal is a sequenced record the broker refused for good.
type refusal struct {
	rec *kgo.Record
	err error
}

// produce sends the sequenced records and waits for the broker. A record
// refused for good (stream.PermanentProduceError) is sent once more on its
// own, since a broker refuses a whole batch for one record too large; when
// it is refused again it comes back in refused. Any other failure fails
// the call, and the batch is retried whole. next is, per partition, the
// offset after the last record the broker took.
func (f *Fanout) produce(ctx context.Context, recs []*kgo.Record) (refused []refusal, next map[int32]int64, err error) {
	if len(recs) == 0 {
		return nil, nil, nil
	}
	next = map[int32]int64{}
	took := func(r *kgo.Record) { next[r.Partition] = max(next[r.Partition], r.Offset+1) }
	var again []*kgo.Record
	for _, res := range f.produceSync(ctx, recs) {
		switch {
		case res.Err == nil:
			took(res.Record)
		case stream.PermanentProduceError(res.Err):
			again = append(again, res.Record)
		default:
			return nil, nil, fmt.Errorf("produce %d sequenced records: %w", len(recs), res.Err)
		}
	}
	for _, rec := range again {
		// A fresh record: franz-go filled in the first one's fields.
		res := f.produceSync(ctx, []*kgo.Record{{Topic: rec.Topic, Key: rec.Key, Value: rec.Value}})
		switch err := res.FirstErr(); {
		case err == nil:
			took(res[0].Record)
		case stream.PermanentProduceError(err):
			refused = append(refused, refusal{rec: rec, err: err})
		default:
			return nil, nil, fmt.Errorf("produce sequenced record of %s alone: %w", rec.Key, err)
		}
	}
	return refused, next, nil
}

func (f *Fanout) produceSync(ctx context.Context, recs []*kgo.Record) kgo.ProduceResults {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.ProduceTimeout)
	defer cancel()
	return f.producer.ProduceSync(ctx, recs...)
}

// refusedLetter is the dead letter of a record whose sequenced copy the
// broker refused for good. It was sequenced (the limits of split should
// have stopped it: the broker's limit is below ours): its seq stays in the
// timeline and inboxes, so sync serves it, but history and previews never
// see it. Producing the dead letter's value to im.messages again, once the
// broker takes it, gets the same seq (same client_msg_id) and fills them.
func (f *Fanout) refusedLetter(src *kgo.Record, rf refusal) stream.DeadLetter {
	sq, _ := schemas.DecodeSequenced(rf.rec.Value)
	f.cfg.Logger.Error("im.sequenced refused a sequenced record for good; dead-lettered", "conv", string(rf.rec.Key),
		"seq", sq.GetSeq(), "bytes", len(rf.rec.Value), "err", rf.err)
	return stream.DeadLetter{Record: src, Headers: sequencedHeaders(sq.GetSeq()), Reason: fmt.Sprintf("sequenced as seq %d of %s, but %s refused it (%d bytes): %v",
		sq.GetSeq(), rf.rec.Key, rf.rec.Topic, len(rf.rec.Value), rf.err)}
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
	// misplaced: read from a partition their conversation does not hash
	// to, in offset order, to forward (forward.go).
	misplaced []pending
}

// split decodes and validates the records. Invalid ones become dead
// letters; at-most-once messages are dropped (never stored); records
// whose conv_id does not hash to their partition, of the topic's
// partitions, are misplaced.
func (f *Fanout) split(records []*kgo.Record, partitions int32) splitBatch {
	b := splitBatch{byConv: map[string][]pending{}}
	for _, r := range records {
		m, err := schemas.DecodeMessage(r.Value, f.cfg.Limits)
		if err == nil && !m.Stored() && m.GetKind() != schemas.Kind_KIND_MESSAGE {
			err = &schemas.InvalidError{Field: "qos", Reason: "a membership change cannot be at-most-once"}
		}
		if err != nil {
			b.dead = append(b.dead, stream.DeadLetter{Record: r, Headers: refusedHeaders(schemas.RefusalOf(err)), Reason: err.Error()})
			continue
		}
		if !m.Stored() {
			f.metrics.dropped.Inc()
			continue
		}
		conv := m.GetConvId()
		if stream.KeyPartition([]byte(conv), partitions) != r.Partition {
			b.misplaced = append(b.misplaced, pending{rec: r, msg: m})
			continue
		}
		if _, ok := b.byConv[conv]; !ok {
			b.order = append(b.order, conv)
		}
		b.byConv[conv] = append(b.byConv[conv], pending{rec: r, msg: m})
	}
	return b
}

// dataKeys gives each sealed record its conversation's wrapped data key,
// read once per conversation a batch: durable in the changelog (and
// ClickHouse) before the commit, so losing Redis never loses the key to
// its bodies.
type dataKeys struct {
	store  *redisstore.Store
	keys   map[string]string // conv → wrapped data key
	failed map[string]error  // conv → why its wrapped data key can never be read
}

// attach sets sq's data key when it is sealed and has none. never is why
// the key can never be read (the record is dead-lettered); err is a store
// to wait for.
func (k *dataKeys) attach(ctx context.Context, sq *schemas.Sequenced) (never, err error) {
	if sq.GetMessage().GetSealedEpoch() == 0 || sq.GetDataKey() != "" {
		return nil, nil
	}
	conv := sq.GetMessage().GetConvId()
	if err := k.failed[conv]; err != nil {
		return err, nil
	}
	w, ok := k.keys[conv]
	if !ok {
		w, err = k.store.WrappedDataKey(ctx, conv)
		switch {
		case redisstore.Permanent(err):
			if k.failed == nil {
				k.failed = map[string]error{}
			}
			k.failed[conv] = err
			return err, nil
		case err != nil:
			return nil, err
		}
		if k.keys == nil {
			k.keys = map[string]string{}
		}
		k.keys[conv] = w
	}
	sq.DataKey = w
	return nil, nil
}
