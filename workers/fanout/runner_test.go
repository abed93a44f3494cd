package fanout

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
)

const testGroup = "fanout"

// runner runs f in the consumer group until the returned stop is called
// (or the test ends).
func (h *harness) runner(f *Fanout) (stop func()) {
	h.t.Helper()
	r, err := stream.New(stream.Config{
		Brokers:         h.addrs,
		Group:           testGroup,
		Topics:          []string{schemas.TopicMessages},
		DeadLetterTopic: schemas.TopicDeadLetter,
		MaxPollRecords:  8, // many small batches: rebalances land mid-stream
		RetryMin:        5 * time.Millisecond,
		RetryMax:        50 * time.Millisecond,
		CommitInterval:  50 * time.Millisecond,
		Logger:          slog.New(slog.NewTextHandler(h.t.Output(), &slog.HandlerOptions{Level: slog.LevelError})),
		ExtraOpts: []kgo.Opt{
			kgo.HeartbeatInterval(100 * time.Millisecond),
			kgo.SessionTimeout(6 * time.Second),
			kgo.FetchMaxWait(100 * time.Millisecond),
		},
	}, f)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			h.t.Error("runner did not stop")
		}
		r.Close()
	}
	h.t.Cleanup(stop)
	return stop
}

// produce writes records to im.messages and waits for the acks.
func (h *harness) produce(recs []*kgo.Record) {
	h.t.Helper()
	cl, err := stream.NewProducer(h.addrs)
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

// waitFor polls cond until it holds; the deadline only keeps a broken
// build from hanging.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// seqOf is the conversation's last seq (0 before its first record).
func (h *harness) seqOf(conv string) uint64 {
	n, _ := h.rdb.HGet(context.Background(), h.store.Keys().ConvMeta(conv), "seq").Uint64()
	return n
}

// committedToEnd reports whether the group committed every partition of
// im.messages up to its end: then every record's effects are done.
func (h *harness) committedToEnd() bool {
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.addrs...))
	if err != nil {
		h.t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, schemas.TopicMessages)
	if err != nil {
		return false
	}
	got, err := adm.FetchOffsets(ctx, testGroup)
	if errors.Is(err, kerr.GroupIDNotFound) || err != nil {
		return false
	}
	done := true
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := got.Lookup(schemas.TopicMessages, o.Partition)
		if o.Offset > 0 && (!ok || c.At != o.Offset) {
			done = false
		}
	})
	return done
}

// member is one worker process of the test's consumer group.
type member struct {
	f    *Fanout
	reg  *prometheus.Registry
	stop func()
}

// join starts a member; slow members take a while over every Redis call,
// so that the stream is still running when the group changes.
func (h *harness) join(slow bool) *member {
	h.t.Helper()
	calls := newRedisCalls()
	if slow {
		calls.hold = 15 * time.Millisecond
	}
	cfg := h.cfg
	m := &member{reg: prometheus.NewRegistry()}
	cfg.Metrics = m.reg
	m.f = h.fanoutWith(countedClient(h.t, calls), cfg)
	m.stop = h.runner(m.f)
	return m
}

// handled is how many records the member sequenced or found sequenced.
func (m *member) handled(t *testing.T) float64 {
	return counter(t, m.reg, "offlinebox_fanout_messages_sequenced_total") +
		counter(t, m.reg, "offlinebox_fanout_duplicates_total")
}

func TestRebalanceInTheMiddleOfTheStreamKeepsEveryInvariant(t *testing.T) {
	h := newHarness(t, Config{})
	ms := append(scenario(5), renamed(scenario(8), "x-")...)
	h.produce(records(ms...))
	want := distinctIDs(ms)

	a := h.join(true)
	waitFor(t, "the first member makes progress", func() bool { return a.handled(t) > 0 })
	b := h.join(true) // rebalance: partitions move to the new member
	waitFor(t, "the second member takes over partitions", func() bool { return b.handled(t) > 0 })
	if h.committedToEnd() {
		t.Fatal("the stream ended before the rebalance; the test proves nothing")
	}
	a.stop() // rebalance again: everything goes to the second member
	waitFor(t, "every record is committed", h.committedToEnd)

	for _, prefix := range []string{"", "x-"} {
		for _, conv := range scenarioConvs {
			if tr := h.checkInboxes(prefix + conv); int(tr.seq) != want[prefix+conv] {
				t.Errorf("%s%s: %d seqs, want %d", prefix, conv, tr.seq, want[prefix+conv])
			}
		}
	}
	h.checkProduced(want)
}

// renamed moves a scenario to other conversation ids. A resend is the
// same *Message as its first copy: each is renamed once.
func renamed(ms []*schemas.Message, prefix string) []*schemas.Message {
	done := map[*schemas.Message]bool{}
	for _, m := range ms {
		if !done[m] {
			done[m] = true
			m.ConvId = prefix + m.ConvId
		}
	}
	return ms
}

func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

func TestWorkerThatDiesBetweenSequencingAndInboxIsRepairedByTheNextOwner(t *testing.T) {
	h := newHarness(t, Config{})
	ms := scenario(6)
	h.produce(records(ms...))

	// The first member loses its inbox writes after a few calls: its
	// batch fails over and over, is never committed, and the member dies.
	sick := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t)})
	t.Cleanup(func() { _ = sick.Close() })
	sick.AddHook(&failingInbox{after: 30})
	stopA := h.runner(h.fanout(sick))
	waitFor(t, "the sick member sequences records", func() bool { return h.seqOf("team") > 0 })
	stopA()
	if h.committedToEnd() {
		t.Fatal("the sick member committed everything; the test proves nothing")
	}

	// The next owner repeats the uncommitted records.
	h.runner(h.fanout(nil))
	waitFor(t, "every record is committed", h.committedToEnd)
	h.checkAll(distinctIDs(ms))
	h.checkProduced(distinctIDs(ms))
}
