package embedded

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// StartKafka starts an in-process kfake broker on 127.0.0.1 that keeps its
// logs, offsets and groups in dataDir, so a restarted demo finds its topics
// and committed offsets again. Topics are created with the given number of
// partitions unless they already exist. Close the cluster to stop it.
func StartKafka(dataDir string, partitions int32, topics ...string) (*kfake.Cluster, error) {
	if dataDir == "" {
		return nil, fmt.Errorf("embedded: kafka data dir is required")
	}
	if partitions < 1 {
		return nil, fmt.Errorf("embedded: kafka partitions %d is below 1", partitions)
	}
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.DataDir(dataDir),
		kfake.SeedTopics(partitions, topics...),
	)
	if err != nil {
		return nil, fmt.Errorf("start kfake in %s: %w", dataDir, err)
	}
	// Seeding applies only to an empty data dir; a reloaded one may lack
	// topics added since it was written.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := createMissingTopics(ctx, c.ListenAddrs(), partitions, topics); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func createMissingTopics(ctx context.Context, brokers []string, partitions int32, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	resps, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, 1, nil, topics...)
	if err != nil {
		return fmt.Errorf("create topics %v: %w", topics, err)
	}
	for _, r := range resps.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", r.Topic, r.Err)
		}
	}
	return nil
}
