package push

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
)

// Pusher is the push stage. It implements stream.Handler and is safe for
// concurrent Handle calls of different partitions.
type Pusher struct {
	cfg     Config
	store   *redisstore.Store
	bus     *live.Bus
	metrics *metrics

	mu      sync.Mutex
	members map[string]memberEntry

	rounds combiner
}

var _ stream.Handler = (*Pusher)(nil)

type memberEntry struct {
	version uint64
	// large: the conversation is a large group (members and untold are
	// not kept: its records go on its channel, its joiners by name).
	large   bool
	members map[string]uint64 // member → seq that made them one
	// untold are the members whose nodes this stage has not sent a record
	// of the conversation by name yet, nor told to listen: they may not
	// listen to its channel. A member who stays one across a change of
	// the membership stays told.
	untold map[string]bool
}

// New returns a Pusher reading presence and members from rdb (the main
// store) and publishing on it.
func New(cfg Config, rdb redis.UniversalClient) (*Pusher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rdb == nil {
		return nil, errors.New("push: a Redis client is required")
	}
	cfg = cfg.withDefaults()
	st, err := redisstore.New(rdb, cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("push: %w", err)
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("push: register metrics: %w", err)
	}
	p := &Pusher{cfg: cfg, store: st, bus: live.NewBusFormat(rdb, st.Config().CallTimeout, cfg.BusFormat), metrics: m,
		members: map[string]memberEntry{}}
	p.rounds.run = p.pushRound
	return p, nil
}

// item is one record to hand out.
type item struct {
	kind   string
	conv   string
	seq    uint64 // 0 for ephemeral records
	record []byte
	// msgKind, sender and recipients are the record's message's.
	msgKind    schemas.Kind
	sender     string
	recipients []string
	// users meant, looked up in the presence registry (a conversation's
	// members when its membership changed, a large group's joiners, a
	// rejected record's sender); their nodes start listening to the
	// conversation's channel.
	users []string
	// channel: published once on the conversation's channel, to the nodes
	// whose connections listen to it; large: the conversation is a large
	// group.
	channel bool
	large   bool
	// listeners are joiners not pushed this record (it is their join):
	// their nodes start listening to the conversation's channel.
	listeners []string
	// joined: user → the seq they joined at (for the targets' floors).
	joined map[string]uint64
	// told are the members of users and listeners named for the first
	// time (see memberEntry.untold).
	told []string
	// exceptUser is left out (the sender of a QoS 0 record).
	exceptUser string
	rejected   *live.Rejected
	// dropped: a store call this round made for it can never succeed (a
	// key of the wrong type); it is not pushed (see storeRefused).
	dropped bool
}

// Handle pushes the records of one partition, in one round with those of
// the other partitions handled meanwhile. A Redis that is down fails the
// round (the runner waits and retries; a push repeated is harmless, the
// client keeps messages by seq). Nothing is a dead letter here: what is
// undecodable was already dead-lettered by the stage that owns it.
func (p *Pusher) Handle(ctx context.Context, records []*kgo.Record) ([]stream.DeadLetter, error) {
	items := p.decode(records)
	if len(items) == 0 {
		return nil, nil
	}
	return nil, p.rounds.do(ctx, items)
}

// pushRound runs one round: the refusals in it are kept for their
// senders first (store first, as for messages), then everything is
// pushed.
func (p *Pusher) pushRound(ctx context.Context, items []*item) error {
	if err := p.keepRejections(ctx, items); err != nil {
		return err
	}
	return p.pushItems(ctx, items)
}

// storeRefused reads an error of a store call made for many items: a
// failure to wait for is returned, to fail the round (the runner tries it
// again); the items a store can never answer for (redisstore.ItemErrors: a
// key of the wrong type) are given up alone, counted and logged, and
// their devices get them with their next pull. Without this one broken
// key would fail every round it is in, for ever, and hold every partition
// that shares them. whose(i) are the items of failed index i.
func (p *Pusher) storeRefused(err error, whose func(i int) []*item) error {
	var failed redisstore.ItemErrors
	if !errors.As(err, &failed) {
		return err
	}
	for i, ferr := range failed {
		its := whose(i)
		for _, it := range its {
			it.dropped = true
		}
		p.metrics.skipped.WithLabelValues("store_refused").Add(float64(len(its)))
		p.cfg.Logger.Warn("push: records not pushed: the store can never answer for them; their devices pull them",
			"records", len(its), "err", ferr)
	}
	return nil
}

// pushItems publishes one round of items (records of a conversation are
// in one partition, so in order): those of conversations the stage knows
// as they are in one round trip, then the others resolved.
func (p *Pusher) pushItems(ctx context.Context, items []*item) error {
	p.metrics.rounds.Inc()
	rest, err := p.publishKnown(ctx, items)
	if err != nil || len(rest) == 0 {
		return err
	}
	if err := p.resolve(ctx, rest); err != nil {
		return err
	}
	return p.publish(ctx, rest)
}
