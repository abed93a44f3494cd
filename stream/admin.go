package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// adminTimeout bounds EnsureTopics when ctx has no deadline of its own.
const adminTimeout = 30 * time.Second

// EnsureTopics creates the topics that do not exist yet, each with the given
// number of partitions and the broker's default replication factor. Topics
// that already exist are left as they are, whatever their partition count.
func EnsureTopics(ctx context.Context, brokers []string, partitions int32, topics ...string) error {
	if len(brokers) == 0 {
		return fmt.Errorf("ensure topics: %w: no brokers", ErrInvalidConfig)
	}
	if partitions < 1 {
		return fmt.Errorf("ensure topics: %w: partitions %d < 1", ErrInvalidConfig, partitions)
	}
	if len(topics) == 0 {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, adminTimeout)
		defer cancel()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return fmt.Errorf("ensure topics: new kafka client: %w", err)
	}
	defer cl.Close()
	resps, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, -1, nil, topics...)
	if err != nil {
		return fmt.Errorf("ensure topics %v: %w", topics, err)
	}
	var errs []error
	for _, t := range resps.Sorted() {
		if t.Err != nil && !errors.Is(t.Err, kerr.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("create topic %s: %w", t.Topic, t.Err))
		}
	}
	return errors.Join(errs...)
}

// NewProducer returns a client for synchronous producing (ProduceSync):
// idempotent, acknowledged by all in-sync replicas, each request bounded by
// a timeout and each record failed after a bounded delivery time instead of
// being retried forever. opts come last and override these.
func NewProducer(brokers []string, opts ...kgo.Opt) (*kgo.Client, error) {
	if len(brokers) == 0 {
		return nil, fmt.Errorf("new producer: %w: no brokers", ErrInvalidConfig)
	}
	all := append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProduceRequestTimeout(10 * time.Second),
		kgo.RecordDeliveryTimeout(DefaultProduceTimeout),
		kgo.ProducerLinger(0),
	}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		return nil, fmt.Errorf("new producer: %w", err)
	}
	return cl, nil
}
