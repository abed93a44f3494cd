package fanout

import (
	"context"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
)

// crc32Partition is where librdkafka's default partitioner
// (consistent_random) puts a keyed record: the CRC32 of the key mod n.
func crc32Partition(key []byte, n int) int { return int(crc32.ChecksumIEEE(key) % uint32(n)) }

// foreignProduce writes recs to im.messages as a producer placing records
// by CRC32 of the key would, and waits for the acks.
func (h *harness) foreignProduce(recs []*kgo.Record) {
	h.t.Helper()
	cl, err := stream.NewProducer(h.addrs, kgo.RecordPartitioner(kgo.BasicConsistentPartitioner(
		func(string) func(*kgo.Record, int) int {
			return func(r *kgo.Record, n int) int { return crc32Partition(r.Key, n) }
		})))
	if err != nil {
		h.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		h.t.Fatal(err)
	}
}

// misplacedConvs are n group ids that CRC32 and murmur2 put on different
// partitions of four.
func misplacedConvs(n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		c := fmt.Sprintf("g-%d", i)
		if int32(crc32Partition([]byte(c), 4)) != stream.KeyPartition([]byte(c), 4) {
			out = append(out, c)
		}
	}
	return out
}

// timelineIDs is the conversation's client_msg_ids in seq order.
func (h *harness) timelineIDs(conv string) []string {
	h.t.Helper()
	raw, err := h.rdb.LRange(context.Background(), h.store.Keys().Timeline(conv), 0, -1).Result()
	if err != nil {
		h.t.Fatal(err)
	}
	ids := make([]string, len(raw))
	for i, r := range raw {
		sq, err := redisstore.DecodeEntry([]byte(r), conv, 0)
		if err != nil {
			h.t.Fatal(err)
		}
		ids[i] = sq.GetMessage().GetClientMsgId()
	}
	return ids
}

// forwardedOnTopic reads im.messages and returns the records carrying the
// forward header.
func (h *harness) forwardedOnTopic() []*kgo.Record {
	h.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.addrs...), kgo.ConsumeTopics(schemas.TopicMessages),
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
		for _, r := range fs.Records() {
			if _, ok := header(r, schemas.HeaderForwardedFrom); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

func TestRecordsAnotherPartitionerMisplacedAreForwardedAndSequencedOnceByTheirConversationsOwner(t *testing.T) {
	h := newHarness(t, Config{})
	convs := misplacedConvs(2)
	members := users("u", 5)
	for _, c := range convs {
		h.produce(records(msg(c, c+"-create", members[0], join(members...))))
	}
	// The API and the foreign producer interleave on the same
	// conversations, each mentioning someone.
	misplaced := 0
	for i := range 30 {
		var api, other []*kgo.Record
		for _, c := range convs {
			api = append(api, record(msg(c, fmt.Sprintf("%s-api-%d", c, i), members[1], mentions(members[2]))))
			rec := record(msg(c, fmt.Sprintf("%s-crc-%d", c, i), members[3], mentions(members[4])))
			if i%5 == 0 {
				// No key: placed by the body's conv_id all the same
				// (and in no order with the keyed ones: another partition).
				rec = record(msg(c, fmt.Sprintf("%s-nokey-%d", c, i), members[3], mentions(members[4])))
				rec.Key = nil
			}
			if int32(crc32Partition(rec.Key, 4)) != stream.KeyPartition([]byte(c), 4) {
				misplaced++
			}
			other = append(other, rec)
		}
		h.produce(api)
		h.foreignProduce(other)
	}
	a, b := h.join(false), h.join(false)
	waitFor(t, "every record is committed", h.committedToEnd)

	for _, c := range convs {
		if tr := h.checkInboxes(c); tr.seq != 61 {
			t.Errorf("%s: %d seqs, want 61 (each message once)", c, tr.seq)
		}
		ids := h.timelineIDs(c)
		for _, from := range []string{"-api-", "-crc-"} {
			var order []string
			for _, id := range ids {
				if strings.Contains(id, from) {
					order = append(order, id)
				}
			}
			var want []string
			for i := range 30 {
				if from == "-api-" || i%5 != 0 {
					want = append(want, fmt.Sprintf("%s%s%d", c, from, i))
				}
			}
			if !slices.Equal(order, want) {
				t.Errorf("%s: the %s producer's messages in seq order %v, want %v", c, from, order, want)
			}
		}
	}
	fwd := h.forwardedOnTopic()
	if len(fwd) < misplaced || misplaced < 48 {
		t.Fatalf("%d forwarded records on im.messages, want every one of the %d misplaced", len(fwd), misplaced)
	}
	for _, r := range fwd {
		m, err := schemas.DecodeMessage(r.Value, schemas.Limits{}.WithDefaults())
		if err != nil {
			t.Fatal(err)
		}
		if want := stream.KeyPartition([]byte(m.GetConvId()), 4); r.Partition != want {
			t.Errorf("%s forwarded to partition %d, its conversation hashes to %d", m.GetClientMsgId(), r.Partition, want)
		}
	}
	counted := counter(t, a.reg, "offlinebox_fanout_forwarded_total") + counter(t, b.reg, "offlinebox_fanout_forwarded_total")
	if int(counted) != len(fwd) {
		t.Errorf("offlinebox_fanout_forwarded_total says %v, im.messages holds %d forwards", counted, len(fwd))
	}
	if dead := h.deadLetters(); len(dead) != 0 {
		t.Errorf("%d dead letters, want none", len(dead))
	}
}

func TestAMisplacedRecordsOffsetIsCommittedOnlyAfterTheBrokerAcknowledgedItsForward(t *testing.T) {
	c, addrs := testenv.Kafka(t, 4, schemas.TopicMessages, schemas.TopicSequenced, schemas.TopicDeadLetter)
	rdb, prefix := testenv.Redis(t)
	h := newHarnessOn(t, rdb, prefix, addrs, Config{ProduceTimeout: 300 * time.Millisecond})
	conv := misplacedConvs(1)[0]
	wrong := int32(crc32Partition([]byte(conv), 4))
	ms := []*schemas.Message{msg(conv, "create", "u0", join("u0", "u1"))}
	for i := range 5 {
		ms = append(ms, msg(conv, fmt.Sprint("m-", i), "u0", mentions("u1")))
	}
	h.foreignProduce(records(ms...))

	// From now on the broker refuses every produce, as one whose replicas
	// are away would.
	var failing atomic.Bool
	var refused atomic.Int32
	failing.Store(true)
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !failing.Load() {
			return nil, nil, false
		}
		refused.Add(1)
		return refuseProduce(req.(*kmsg.ProduceRequest), kerr.NotEnoughReplicas), nil, true
	})
	m := h.join(false)
	waitFor(t, "the forward is tried and refused again", func() bool { return refused.Load() >= 2 })
	time.Sleep(300 * time.Millisecond) // six commit intervals
	if at := h.committedAt(wrong); at > 0 {
		t.Fatalf("partition %d committed at %d while its forward was refused", wrong, at)
	}
	if s := h.seqOf(conv); s != 0 {
		t.Fatalf("%s sequenced on the partition it was misplaced on (seq %d)", conv, s)
	}
	if n := counter(t, m.reg, "offlinebox_fanout_forwarded_total"); n != 0 {
		t.Fatalf("%v forwards counted while the broker refused them", n)
	}

	failing.Store(false)
	waitFor(t, "every record is committed", h.committedToEnd)
	if tr := h.checkInboxes(conv); tr.seq != uint64(len(ms)) {
		t.Errorf("%s: %d seqs, want %d", conv, tr.seq, len(ms))
	}
	if n := counter(t, m.reg, "offlinebox_fanout_forwarded_total"); int(n) != len(ms) {
		t.Errorf("offlinebox_fanout_forwarded_total = %v, want %d", n, len(ms))
	}
}

// refuseProduce answers every partition of req with code.
func refuseProduce(req *kmsg.ProduceRequest, code *kerr.Error) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code.Code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// committedAt is the group's committed offset of a partition of
// im.messages (-1 when none).
func (h *harness) committedAt(partition int32) int64 {
	h.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.addrs...))
	if err != nil {
		h.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := kadm.NewClient(cl).FetchOffsets(ctx, testGroup)
	if err != nil {
		return -1
	}
	if o, ok := got.Lookup(schemas.TopicMessages, partition); ok {
		return o.At
	}
	return -1
}
