package embedded_test

import (
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/embedded"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestKafkaKeepsRecordsAndAddsTopicsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := timeout(t, 30*time.Second)

	first, err := embedded.StartKafka(dir, 2, "a")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(first.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "a", Key: []byte("k"), Value: []byte("kept")}).FirstErr()
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	first.Close()

	second, err := embedded.StartKafka(dir, 2, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(second.Close)
	cl, err = kgo.NewClient(kgo.SeedBrokers(second.ListenAddrs()...), kgo.ConsumeTopics("a"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)

	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if d, ok := topics[name]; !ok || len(d.Partitions) != 2 {
			t.Fatalf("topic %s after restart: %+v; want 2 partitions", name, d)
		}
	}
	fetches := cl.PollFetches(ctx)
	if err := fetches.Err0(); err != nil {
		t.Fatal(err)
	}
	var got []string
	fetches.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	if len(got) != 1 || got[0] != "kept" {
		t.Fatalf("records after restart: %q; want [kept]", got)
	}
}

func TestKafkaRejectsBadArguments(t *testing.T) {
	tests := []struct {
		name       string
		dir        string
		partitions int32
	}{
		{"no dir", "", 1},
		{"no partitions", "x", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if c, err := embedded.StartKafka(tt.dir, tt.partitions, "t"); err == nil {
				c.Close()
				t.Fatal("StartKafka accepted bad arguments")
			}
		})
	}
}
