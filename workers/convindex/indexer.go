package convindex

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/promreg"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
)

// Indexer applies im.sequenced and im.receipts records to the users'
// previews and read state. It is safe for concurrent Handle calls of
// different partitions.
type Indexer struct {
	cfg     Config
	router  *redisstore.InboxRouter
	metrics *metrics
}

var _ stream.Handler = (*Indexer)(nil)

// New returns an Indexer writing through router (its main store holds the
// conversations; users' keys may live on its hot store).
func New(cfg Config, router *redisstore.InboxRouter) (*Indexer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if router == nil {
		return nil, errors.New("convindex: a router is required")
	}
	cfg = cfg.withDefaults()
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("convindex: register metrics: %w", err)
	}
	return &Indexer{cfg: cfg, router: router, metrics: m}, nil
}

// batch is what one call of Handle applies.
type batch struct {
	// latest is the newest ordinary message per conversation: only it
	// decides the preview.
	latest map[string]sourced
	reads  []redisstore.ReadMark
	// readRecs[i] is the receipt record reads[i] came from.
	readRecs []*kgo.Record
	dead     []stream.DeadLetter
}

// sourced is a sequenced record with the record it was read from.
type sourced struct {
	sq  *schemas.Sequenced
	rec *kgo.Record
}

// Handle applies the records of one partition. Undecodable records come
// back as dead letters, and so do those whose preview or read receipt can
// never be written (redisstore.ItemErrors: a key of the wrong type), the
// rest being applied; any other store failure fails the call, and the
// runner retries the same records, which changes nothing already done.
func (ix *Indexer) Handle(ctx context.Context, records []*kgo.Record) ([]stream.DeadLetter, error) {
	b := ix.split(records)
	dead := b.dead
	failed, err := ix.applyPreviews(ctx, b.latest)
	if err != nil {
		return nil, err
	}
	dead = append(dead, failed...)
	if failed, err = ix.applyReads(ctx, b.reads, b.readRecs); err != nil {
		return nil, err
	}
	dead = append(dead, failed...)
	ix.metrics.dead.Add(float64(len(dead)))
	return dead, nil
}

func (ix *Indexer) split(records []*kgo.Record) batch {
	b := batch{latest: map[string]sourced{}}
	for _, r := range records {
		switch r.Topic {
		case ix.cfg.SequencedTopic:
			sq, err := schemas.DecodeSequenced(r.Value)
			if err != nil {
				b.dead = append(b.dead, stream.DeadLetter{Record: r, Reason: err.Error()})
				continue
			}
			if sq.GetMessage().GetKind() != schemas.Kind_KIND_MESSAGE {
				continue // membership notices do not change the preview
			}
			conv := sq.GetMessage().GetConvId()
			if cur, ok := b.latest[conv]; !ok || newer(sq, cur.sq) {
				b.latest[conv] = sourced{sq: sq, rec: r}
			}
		case ix.cfg.ReceiptsTopic:
			rc, err := schemas.DecodeReceipt(r.Value)
			if err != nil {
				b.dead = append(b.dead, stream.DeadLetter{Record: r, Reason: err.Error()})
				continue
			}
			b.reads = append(b.reads, redisstore.ReadMark{User: rc.GetUserId(), Conv: rc.GetConvId(), Seq: rc.GetSeq()})
			b.readRecs = append(b.readRecs, r)
		default:
			b.dead = append(b.dead, stream.DeadLetter{Record: r, Reason: "convindex does not consume topic " + r.Topic})
		}
	}
	return b
}

// newer orders messages by (epoch, seq).
func newer(a, b *schemas.Sequenced) bool {
	if a.GetEpoch() != b.GetEpoch() {
		return a.GetEpoch() > b.GetEpoch()
	}
	return a.GetSeq() > b.GetSeq()
}

// applyPreviews applies the newest message of each conversation to its
// members' previews; it returns the dead letters of those that can never
// be applied.
func (ix *Indexer) applyPreviews(ctx context.Context, latest map[string]sourced) ([]stream.DeadLetter, error) {
	if len(latest) == 0 {
		return nil, nil
	}
	list := make([]*schemas.Sequenced, 0, len(latest))
	recs := make([]*kgo.Record, 0, len(latest))
	for _, l := range latest {
		list = append(list, l.sq)
		recs = append(recs, l.rec)
	}
	dead, applied, err := deadItems(ix.router.ApplyPreviews(ctx, list), recs, func(i int, e error) string {
		sq := list[i]
		ix.cfg.Logger.Error("a preview can never be written; the message is dead-lettered",
			"conv", sq.GetMessage().GetConvId(), "seq", sq.GetSeq(), "err", e)
		return fmt.Sprintf("the preview of seq %d of %s (epoch %d) can never be written: %v",
			sq.GetSeq(), sq.GetMessage().GetConvId(), sq.GetEpoch(), e)
	})
	if err != nil {
		return nil, err
	}
	ix.metrics.previews.Add(float64(applied))
	return dead, nil
}

// applyReads applies receipts, each user's on the store holding their
// keys; it returns the dead letters of those that can never be applied
// (recs[i] is the record of reads[i]).
func (ix *Indexer) applyReads(ctx context.Context, reads []redisstore.ReadMark, recs []*kgo.Record) ([]stream.DeadLetter, error) {
	if len(reads) == 0 {
		return nil, nil
	}
	raised, err := ix.router.ApplyReads(ctx, reads)
	ix.metrics.readsRaised.Add(float64(raised))
	dead, applied, err := deadItems(err, recs, func(i int, e error) string {
		m := reads[i]
		ix.cfg.Logger.Error("a read receipt can never be applied; dead-lettered", "user", m.User, "conv", m.Conv,
			"seq", m.Seq, "err", e)
		return fmt.Sprintf("the read receipt of %s in %s up to seq %d can never be applied: %v", m.User, m.Conv, m.Seq, e)
	})
	if err != nil {
		return nil, err
	}
	ix.metrics.receipts.Add(float64(applied))
	return dead, nil
}

// deadItems splits the error of a batched store call over recs: the items
// it can never apply (redisstore.ItemErrors, by index) become dead letters
// of their records, why(i, e) saying why item i is dead; any other error
// is returned whole, so that the batch is retried. applied is how many
// items went through.
func deadItems(err error, recs []*kgo.Record, why func(i int, e error) string) (dead []stream.DeadLetter, applied int, _ error) {
	var failed redisstore.ItemErrors
	if err != nil && !errors.As(err, &failed) {
		return nil, 0, fmt.Errorf("convindex: %w", err)
	}
	for i := range recs {
		if e, ok := failed[i]; ok {
			dead = append(dead, stream.DeadLetter{Record: recs[i], Reason: why(i, e)})
		}
	}
	return dead, len(recs) - len(failed), nil
}

type metrics struct {
	previews    prometheus.Counter
	receipts    prometheus.Counter
	readsRaised prometheus.Counter
	dead        prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	s := promreg.On(reg)
	m := &metrics{
		previews:    s.Counter("offlinebox_convindex_previews_total", "Conversations whose members' previews were brought to a newer message."),
		receipts:    s.Counter("offlinebox_convindex_receipts_total", "Read receipts applied (replays included)."),
		readsRaised: s.Counter("offlinebox_convindex_read_raised_total", "Read receipts that raised a read seq."),
		dead:        s.Counter("offlinebox_convindex_dead_letters_total", "Records given up on as dead letters."),
	}
	return m, s.Err()
}
