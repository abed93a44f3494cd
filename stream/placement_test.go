package stream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

func TestKeyPartitionIsWhereFranzGoDefaultPartitionerPutsTheKey(t *testing.T) {
	part := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	for _, n := range []int32{1, 2, 3, 4, 7, 12, 64, 1000} {
		for i := range 500 {
			key := []byte(fmt.Sprintf("conv-%d-%s", i, "xyz"[:i%4]))
			want := int32(part.Partition(&kgo.Record{Key: key}, int(n)))
			if got := KeyPartition(key, n); got != want {
				t.Fatalf("KeyPartition(%q, %d) = %d, franz-go says %d", key, n, got, want)
			}
		}
	}
}

func TestKeyPartitionMatchesKafkasMurmur2Vectors(t *testing.T) {
	// Values from the Java client's DefaultPartitionerTest and UtilsTest.
	for _, tc := range []struct {
		key  string
		hash int32
	}{
		{"21", -973932308}, {"foobar", -790332482}, {"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829}, {"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	} {
		if got := int32(murmur2([]byte(tc.key))); got != tc.hash {
			t.Errorf("murmur2(%q) = %d, want %d", tc.key, got, tc.hash)
		}
	}
}

func TestPartitionCountsReadsTheTopicAgainWhenARecordComesFromAPartitionBeyondIt(t *testing.T) {
	_, addrs := testenv.Kafka(t, 2, "grows")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	pc := NewPartitionCounts(cl, time.Hour, 5*time.Second)
	if n, err := pc.Count(ctx, "grows", 0); err != nil || n != 2 {
		t.Fatalf("Count = %d, %v; want 2", n, err)
	}
	if _, err := kadm.NewClient(cl).CreatePartitions(ctx, 2, "grows"); err != nil {
		t.Fatal(err)
	}
	if n, _ := pc.Count(ctx, "grows", 1); n != 2 {
		t.Fatalf("a fresh count was read again without cause: %d", n)
	}
	if n, err := pc.Count(ctx, "grows", 3); err != nil || n != 4 {
		t.Fatalf("Count after partitions were added = %d, %v; want 4", n, err)
	}
	if _, err := pc.Count(ctx, "no-such-topic", 0); err == nil {
		t.Fatal("a topic that does not exist has a count")
	}
}
