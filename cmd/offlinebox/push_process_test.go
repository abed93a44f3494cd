package main

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/topology"
)

// TestThePushProcessJoinsTheGroupOfEveryPushStage: `offlinebox push` runs
// the three groups of the push stage, the refusals' included (it once ran
// two, and senders were never told of a refused record).
func TestThePushProcessJoinsTheGroupOfEveryPushStage(t *testing.T) {
	_, brokers := testenv.Kafka(t, 2, schemas.TopicMessages, schemas.TopicSequenced, schemas.TopicReceipts, schemas.TopicDeadLetter)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runPush(ctx, []string{"-kafka", brokers[0], "-redis", testenv.RedisAddr(t), "-prefix", testenv.UniquePrefix(t),
			"-metrics-listen", "", "-partitions", "2"}, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("offlinebox push ended with %v", err)
		}
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	groups := []string{topology.GroupPush, topology.GroupPushEphemeral, topology.GroupPushRejected}
	waitUntil(t, fmt.Sprintf("offlinebox push has a member in each of %v", groups), func() (bool, error) {
		select {
		case err := <-done:
			done <- err // for the deferred wait
			t.Fatalf("offlinebox push ended with %v", err)
		default:
		}
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		defer dcancel()
		described, err := adm.DescribeGroups(dctx, groups...)
		if err != nil {
			return false, err
		}
		for _, g := range groups {
			if d, ok := described[g]; !ok || len(d.Members) == 0 {
				return false, fmt.Errorf("no member in %s", g)
			}
		}
		return true, nil
	})
}
