package fanout

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
)

// padding is an unknown protobuf field of n bytes in all: a record grows
// by it and still decodes.
func padding(n int) []byte {
	tag := protowire.AppendTag(nil, 99, protowire.BytesType)
	body := n - len(tag) - protowire.SizeVarint(uint64(n))
	return protowire.AppendBytes(tag, make([]byte, body))
}

// setMaxMessageBytes sets a topic's max.message.bytes on the broker.
func (h *harness) setMaxMessageBytes(topic string, n int) {
	h.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.addrs...))
	if err != nil {
		h.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v := strconv.Itoa(n)
	res, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &v}}, topic)
	if err == nil {
		_, err = res.On(topic, nil)
	}
	if err != nil {
		h.t.Fatalf("set max.message.bytes of %s: %v", topic, err)
	}
}

// deadLetters reads every record of the dead-letter topic.
func (h *harness) deadLetters() []*kgo.Record {
	h.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.addrs...), kgo.ConsumeTopics(schemas.TopicDeadLetter),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		h.t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for idle := 0; idle < 2; {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		if fs.NumRecords() == 0 {
			idle++
			continue
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func header(r *kgo.Record, key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// A message of ~9,800 mentions that im.messages took (its broker allows
// larger records than im.sequenced) is refused before it is sequenced:
// it never gets a seq, its dead letter goes without the value the
// dead-letter topic cannot hold, and the direct message behind it in the
// same partition is sequenced and produced.
func TestRecordOverTheLimitsIsDeadLetteredBeforeSequencingAndThePartitionMovesOn(t *testing.T) {
	h := newHarness(t, Config{})
	h.setMaxMessageBytes(schemas.TopicMessages, 4<<20)
	ids := make([]string, 9800)
	for i := range ids {
		ids[i] = strings.Repeat("u", 105) + strconv.Itoa(i)
	}
	big := record(msg("d", "big", "a", to("b"), mentions(ids...)))
	if len(big.Value) <= 1_000_012 {
		t.Fatalf("the record is %d bytes; it must be over the 1,000,012 bytes a producer sends by default", len(big.Value))
	}
	next := record(msg("d", "next", "a", to("b")))
	cl, err := stream.NewProducer(h.addrs, kgo.ProducerBatchMaxBytes(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, big, next).FirstErr(); err != nil {
		t.Fatal(err)
	}

	h.runner(h.fanout(nil))
	waitFor(t, "every record is committed", h.committedToEnd)
	if tr := h.checkInboxes("d"); tr.seq != 1 {
		t.Fatalf("d holds %d seqs, want 1: only the next message", tr.seq)
	}
	if got := h.sequencedOnTopic()["d"]; len(got) != 1 || !got[1] {
		t.Fatalf("im.sequenced holds seqs %v of d, want only 1", got)
	}
	dead := h.deadLetters()
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dead))
	}
	reason, _ := header(dead[0], schemas.HeaderDeadReason)
	omitted, ok := header(dead[0], schemas.HeaderDeadValueOmitted)
	if !strings.HasPrefix(reason, "record: is ") || !ok || omitted != strconv.Itoa(len(big.Value)) || len(dead[0].Value) != 0 {
		t.Fatalf("dead letter reason %q, value omitted %q (%v) with %d bytes left; want the record limit and the value left out",
			reason, omitted, ok, len(dead[0].Value))
	}
}

// When im.sequenced refuses a record for good (its limit is below ours),
// the record is dead-lettered with the reason and the seq it holds, and
// the records around it, which shared its produce batch, still reach
// im.sequenced: the batch is not retried forever.
func TestSequencedRecordTheBrokerRefusesIsDeadLetteredAndTheRestAreProduced(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHarness(t, Config{Metrics: reg})
	f := h.fanout(nil)
	handle(t, f, records(msg("g", "create", "a", join("a", "b"))))
	h.setMaxMessageBytes(schemas.TopicSequenced, 4000)
	poison := msg("g", "poison", "b")
	poison.Body = make([]byte, 6000)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(poison.Body) // random: it does not compress below the limit
	batch := records(msg("g", "before", "b"), poison, msg("g", "after", "a"))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dead, err := f.Handle(ctx, batch)
	if err != nil {
		t.Fatalf("Handle failed (the runner would retry it forever): %v", err)
	}
	if len(dead) != 1 || dead[0].Record != batch[1] || !strings.Contains(dead[0].Reason, "sequenced as seq 3 of g") ||
		!strings.Contains(dead[0].Reason, "MESSAGE_TOO_LARGE") {
		t.Fatalf("dead letters %+v, want only the poison record, refused as too large at seq 3", dead)
	}
	got := h.sequencedOnTopic()["g"]
	if len(got) != 3 || !got[1] || !got[2] || !got[4] {
		t.Fatalf("im.sequenced holds seqs %v of g, want 1, 2 and 4", got)
	}
	if n := counter(t, reg, "offlinebox_fanout_sequenced_refused_total"); n != 1 {
		t.Errorf("sequenced_refused_total = %v, want 1", n)
	}
	// The seq stays in the timeline: sync serves it and no seq is reused.
	if tr := h.checkInboxes("g"); tr.seq != 4 {
		t.Fatalf("g holds %d seqs, want 4", tr.seq)
	}
}
