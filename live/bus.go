package live

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bus publishes and subscribes batches over Redis pub/sub: sharded
// (SPUBLISH/SSUBSCRIBE, Redis 7, so that it works on Redis Cluster) where
// the server has it, classic PUBLISH/SUBSCRIBE otherwise. It owns the
// form batches go in (Format): publishers hand it batches, not bytes of
// their own making.
type Bus struct {
	rdb     redis.UniversalClient
	timeout time.Duration
	format  Format

	once    sync.Once
	sharded bool
}

// NewBus returns a bus over rdb that publishes in DefaultFormat; every
// publish is bounded by timeout.
func NewBus(rdb redis.UniversalClient, timeout time.Duration) *Bus {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &Bus{rdb: rdb, timeout: timeout, format: DefaultFormat}
}

// NewBusFormat returns a bus over rdb that publishes in format (the zero
// Format is DefaultFormat). Configurations check the format as they are
// validated (Format.Validate, naming their field); a bus given an unknown
// one refuses every publish, before it reaches Redis.
func NewBusFormat(rdb redis.UniversalClient, timeout time.Duration, format Format) *Bus {
	b := NewBus(rdb, timeout)
	b.format = format.orDefault()
	return b
}

// Format is the form the bus publishes batches in.
func (b *Bus) Format() Format { return b.format }

// Sharded reports whether the server takes sharded pub/sub (asked once).
func (b *Bus) Sharded(ctx context.Context) bool {
	b.once.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, b.timeout)
		defer cancel()
		err := b.rdb.SPublish(ctx, "offlinebox:probe", "").Err()
		b.sharded = err == nil || !isUnknownCommand(err)
	})
	return b.sharded
}

func isUnknownCommand(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command")
}

// Publish sends data to channel; it returns how many subscribers got it.
func (b *Bus) Publish(ctx context.Context, channel string, data []byte) (int64, error) {
	sharded := b.Sharded(ctx)
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	var n int64
	var err error
	if sharded {
		n, err = b.rdb.SPublish(ctx, channel, data).Result()
	} else {
		n, err = b.rdb.Publish(ctx, channel, data).Result()
	}
	if err != nil {
		return 0, fmt.Errorf("publish to %s: %w", channel, err)
	}
	return n, nil
}

// PublishBatch sends batch to channel in the bus's format; it returns how
// many subscribers got it.
func (b *Bus) PublishBatch(ctx context.Context, channel string, batch Batch) (int64, error) {
	data, err := b.format.Encode(batch)
	if err != nil {
		return 0, fmt.Errorf("publish to %s: %w", channel, err)
	}
	return b.Publish(ctx, channel, data)
}

// PublishBatches sends each channel its batch, in the bus's format, in
// one pipeline.
func (b *Bus) PublishBatches(ctx context.Context, batches map[string]*Batch) error {
	msgs := make(map[string][]byte, len(batches))
	for ch, batch := range batches {
		data, err := b.format.Encode(*batch)
		if err != nil {
			return fmt.Errorf("publish to %s: %w", ch, err)
		}
		msgs[ch] = data
	}
	return b.PublishMany(ctx, msgs)
}

// PublishMany sends each channel its data in one pipeline.
func (b *Bus) PublishMany(ctx context.Context, msgs map[string][]byte) error {
	if len(msgs) == 0 {
		return nil
	}
	sharded := b.Sharded(ctx)
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	_, err := b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for ch, data := range msgs {
			if sharded {
				p.SPublish(ctx, ch, data)
			} else {
				p.Publish(ctx, ch, data)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("publish to %d channels: %w", len(msgs), err)
	}
	return nil
}

// Subscription is a set of channels read into one Go channel.
type Subscription struct {
	bus *Bus
	out chan []byte

	// mu guards subs, shared and closed; it is held across a subscribe
	// call to the server (bounded by the bus's timeout) so that a channel
	// is never subscribed twice, and cmu may be taken while it is held,
	// never the other way round.
	mu     sync.Mutex
	subs   map[string]*redis.PubSub // channel → its pubsub (one shared on a standalone server)
	shared *redis.PubSub
	closed bool
	wg     sync.WaitGroup

	// The server confirms each subscribe on the subscribing connection;
	// Add waits for it, because a publish before it reaches nobody here.
	// cmu guards confirmed and stale, and nothing else; no other lock is
	// taken while it is held.
	cmu       sync.Mutex
	confirmed map[string]chan struct{} // channel → closed once confirmed
	stale     map[string]int           // confirmations still due for channels removed before them
	// resubscribed, when set, is told of each channel the server
	// confirmed again without an Add: go-redis reconnected and
	// resubscribed it, and what was published meanwhile reached nobody.
	resubscribed func(channel string)
}

// ErrClosed is returned by a closed subscription.
var ErrClosed = errors.New("live: subscription closed")

// Subscribe starts a subscription; its messages arrive on Messages (buffer
// messages of them; a full buffer makes the Redis reader wait, never drop).
func (b *Bus) Subscribe(ctx context.Context, buffer int) *Subscription {
	b.Sharded(ctx)
	return &Subscription{bus: b, out: make(chan []byte, buffer), subs: map[string]*redis.PubSub{},
		confirmed: map[string]chan struct{}{}, stale: map[string]int{}}
}

// OnResubscribed makes f hear of every channel confirmed again after the
// connection under it dropped and go-redis resubscribed it by itself;
// whatever was published on the channel in between is lost to this
// subscription. f runs on a reader and must not block. Set it before the
// first Add.
func (s *Subscription) OnResubscribed(f func(channel string)) {
	s.cmu.Lock()
	s.resubscribed = f
	s.cmu.Unlock()
}

// Messages is where the subscribed channels' payloads arrive.
func (s *Subscription) Messages() <-chan []byte { return s.out }

// Add subscribes channels and returns once the server confirmed every
// one of them (also those another Add subscribed and that are still
// unconfirmed): from then on, whatever is published on them arrives on
// Messages. On Redis Cluster each channel gets a pubsub of its own (a
// sharded subscription is bound to the node of its slot); on a
// standalone server all share one.
func (s *Subscription) Add(ctx context.Context, channels ...string) error {
	waits, err := s.add(ctx, channels)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.bus.timeout)
	defer cancel()
	for c, ready := range waits {
		select {
		case <-ready:
		case <-ctx.Done():
			return fmt.Errorf("wait for the subscription to %s: %w", c, ctx.Err())
		}
	}
	return nil
}

// add sends the subscribe commands of the channels not subscribed yet and
// returns what to wait for.
func (s *Subscription) add(ctx context.Context, channels []string) (map[string]chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	waits := make(map[string]chan struct{}, len(channels))
	var fresh []string
	s.cmu.Lock()
	for _, c := range channels {
		if _, ok := s.subs[c]; !ok {
			fresh = append(fresh, c)
			s.confirmed[c] = make(chan struct{})
		}
		waits[c] = s.confirmed[c]
	}
	s.cmu.Unlock()
	if len(fresh) == 0 {
		return waits, nil
	}
	if err := s.subscribeFresh(ctx, fresh); err != nil {
		s.cmu.Lock()
		for _, c := range fresh {
			if _, ok := s.subs[c]; !ok {
				delete(s.confirmed, c)
			}
		}
		s.cmu.Unlock()
		return nil, err
	}
	return waits, nil
}

func (s *Subscription) subscribeFresh(ctx context.Context, fresh []string) error {
	_, cluster := s.bus.rdb.(*redis.ClusterClient)
	if !cluster {
		if s.shared == nil {
			s.shared = s.newPubSub(ctx)
		}
		if err := s.subscribe(ctx, s.shared, fresh...); err != nil {
			return err
		}
		for _, c := range fresh {
			s.subs[c] = s.shared
		}
		return nil
	}
	for _, c := range fresh {
		// Subscribed as it is made: the connection goes to the node of
		// the channel's slot only if the pubsub knows the channel before
		// its reader connects (a reader first connects to any node).
		// A failed subscribe shows as a confirmation that never comes.
		s.subs[c] = s.newPubSub(ctx, c)
	}
	return nil
}

func (s *Subscription) newPubSub(ctx context.Context, channels ...string) *redis.PubSub {
	var ps *redis.PubSub
	if s.bus.sharded {
		ps = s.bus.rdb.SSubscribe(ctx, channels...)
	} else {
		ps = s.bus.rdb.Subscribe(ctx, channels...)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for m := range ps.ChannelWithSubscriptions(redis.WithChannelSize(1024)) {
			switch m := m.(type) {
			case *redis.Message:
				s.out <- []byte(m.Payload)
			case *redis.Subscription:
				if m.Kind == "subscribe" || m.Kind == "ssubscribe" {
					s.confirm(m.Channel)
				}
			}
		}
	}()
	return ps
}

// confirm marks channel subscribed. A confirmation nobody waits for is a
// resubscription after a reconnect (go-redis sends them itself) or one of
// a channel removed before it came.
func (s *Subscription) confirm(channel string) {
	if f := s.confirmAgain(channel); f != nil {
		f(channel)
	}
}

// confirmAgain records a confirmation and returns whom to tell when it is
// a resubscription.
func (s *Subscription) confirmAgain(channel string) func(string) {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if s.stale[channel] > 0 {
		if s.stale[channel]--; s.stale[channel] == 0 {
			delete(s.stale, channel)
		}
		return nil
	}
	ready, ok := s.confirmed[channel]
	if !ok {
		return nil
	}
	select {
	case <-ready:
		return s.resubscribed
	default:
		close(ready)
		return nil
	}
}

// forget drops what Add waits for on channel (removed). A confirmation
// still due for it (confirmationDue: it was unsubscribed on the shared
// pubsub) must not pass for that of a later Add; on a channel whose own
// pubsub closes, none will come.
func (s *Subscription) forget(channel string, confirmationDue bool) {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	ready, ok := s.confirmed[channel]
	if !ok {
		return
	}
	delete(s.confirmed, channel)
	select {
	case <-ready:
	default:
		close(ready) // its waiters asked for a channel no longer wanted
		if confirmationDue {
			s.stale[channel]++
		}
	}
}

func (s *Subscription) subscribe(ctx context.Context, ps *redis.PubSub, channels ...string) error {
	ctx, cancel := context.WithTimeout(ctx, s.bus.timeout)
	defer cancel()
	var err error
	if s.bus.sharded {
		err = ps.SSubscribe(ctx, channels...)
	} else {
		err = ps.Subscribe(ctx, channels...)
	}
	if err != nil {
		return fmt.Errorf("subscribe to %d channels: %w", len(channels), err)
	}
	return nil
}

// Remove unsubscribes channels.
func (s *Subscription) Remove(ctx context.Context, channels ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.bus.timeout)
	defer cancel()
	for _, c := range channels {
		ps, ok := s.subs[c]
		if !ok {
			continue
		}
		delete(s.subs, c)
		if ps != s.shared {
			s.forget(c, false)
			_ = ps.Close()
			continue
		}
		s.forget(c, true)
		var err error
		if s.bus.sharded {
			err = ps.SUnsubscribe(ctx, c)
		} else {
			err = ps.Unsubscribe(ctx, c)
		}
		if err != nil {
			return fmt.Errorf("unsubscribe from %s: %w", c, err)
		}
	}
	return nil
}

// Close ends every subscription; Messages is closed once the readers
// stopped. It is idempotent.
func (s *Subscription) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	seen := map[*redis.PubSub]bool{}
	for _, ps := range s.subs {
		if !seen[ps] {
			seen[ps] = true
			_ = ps.Close()
		}
	}
	if s.shared != nil && !seen[s.shared] {
		_ = s.shared.Close()
	}
	s.mu.Unlock()
	go func() {
		s.wg.Wait()
		close(s.out)
	}()
}
