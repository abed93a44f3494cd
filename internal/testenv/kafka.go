package testenv

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Kafka starts an in-process kfake cluster with the given topics, each with
// the given number of partitions, closed when the test ends.
func Kafka(t testing.TB, partitions int32, topics ...string) (*kfake.Cluster, []string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...))
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c, c.ListenAddrs()
}
