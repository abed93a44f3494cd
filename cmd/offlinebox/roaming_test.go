package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/api"
	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
	"github.com/offlinebox/offlinebox/workers/expiry"
	"github.com/offlinebox/offlinebox/workers/fanout"
	"github.com/offlinebox/offlinebox/workers/history"
)

// roamingRig is fanout and the history sink on kfake over the test servers,
// with a clock the test moves, and the API with ClickHouse behind /history.
type roamingRig struct {
	now     atomic.Int64 // unix ms
	brokers []string
	store   *redisstore.Store
	ch      *chstore.Store
	base    string
	prod    *kgo.Client
}

func newRoamingRig(t *testing.T) *roamingRig {
	t.Helper()
	r := &roamingRig{}
	r.now.Store(time.Now().UnixMilli())
	clock := func() time.Time { return time.UnixMilli(r.now.Load()) }
	_, r.brokers = testenv.Kafka(t, 2, schemas.TopicMessages, schemas.TopicSequenced, schemas.TopicReceipts, schemas.TopicDeadLetter)
	rdb, prefix := testenv.Redis(t)
	var err error
	if r.store, err = redisstore.New(rdb, redisstore.Config{Prefix: prefix}); err != nil {
		t.Fatal(err)
	}
	r.ch, _ = testenv.History(t)
	if r.prod, err = stream.NewProducer(r.brokers); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.prod.Close)
	fan, err := fanout.New(fanout.Config{Store: redisstore.Config{Prefix: prefix}, Clock: clock, Brokers: r.brokers}, rdb, r.prod)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fan.Close)
	sink, err := history.New(history.Config{}, r.ch)
	if err != nil {
		t.Fatal(err)
	}
	r.run(t, "fanout", schemas.TopicMessages, fan)
	r.run(t, "history", schemas.TopicSequenced, sink)
	keyring, err := auth.New(auth.Config{Secret: []byte(testSecret)})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Config{Clock: clock}, api.Deps{Router: redisstore.NewInboxRouter(r.store, nil, 0),
		Keyring: keyring, Producer: r.prod, History: r.ch})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	r.base = hs.URL
	return r
}

func (r *roamingRig) run(t *testing.T, group, topic string, h stream.Handler) {
	t.Helper()
	runner, err := stream.New(stream.Config{Brokers: r.brokers, Group: group, Topics: []string{topic},
		DeadLetterTopic: schemas.TopicDeadLetter, MaxPollRecords: 1000}, h)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runner.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s runner: %v", group, err)
		}
	})
}

// send produces n messages of conv from bob, numbered from first.
func (r *roamingRig) send(t *testing.T, conv string, first, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := first; i < first+n; i++ {
		m := &schemas.Message{ClientMsgId: fmt.Sprintf("m%03d", i), ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_DIRECT,
			Sender: "bob", Recipients: []string{"alice"}, Kind: schemas.Kind_KIND_MESSAGE, Body: []byte(fmt.Sprint("message ", i))}
		v, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.prod.ProduceSync(ctx, &kgo.Record{Topic: schemas.TopicMessages, Key: []byte(conv), Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// waitUntil polls cond until it holds or a minute passed.
func waitUntil(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in a minute (last error %v)", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRoamingPagesStitchToRedisPagesAndReplaysCountOnce: messages older
// than the Redis window are served from ClickHouse below the window's
// first seq, so the two page sequences join with no gap and no overlap,
// and records sunk twice are still one message each.
func TestRoamingPagesStitchToRedisPagesAndReplaysCountOnce(t *testing.T) {
	const conv, old, recent = "dm-alice-bob", 120, 80
	r := newRoamingRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// 40 days ago: the first messages. Today: the rest.
	r.now.Store(time.Now().Add(-40 * 24 * time.Hour).UnixMilli())
	r.send(t, conv, 1, old)
	waitUntil(t, "old messages sunk", func() (bool, error) {
		n, err := r.ch.CountMessages(ctx, conv)
		return n == old, err
	})
	r.now.Store(time.Now().UnixMilli())
	r.send(t, conv, old+1, recent)
	waitUntil(t, "every message sunk", func() (bool, error) {
		n, err := r.ch.CountMessages(ctx, conv)
		return n == old+recent, err
	})

	// A replay: the sink gets the first half of the history again.
	replayed := r.replaySequenced(ctx, t, conv, (old+recent)/2)
	if replayed != (old+recent)/2 {
		t.Fatalf("replayed %d records, want %d", replayed, (old+recent)/2)
	}
	waitUntil(t, "replay sunk", func() (bool, error) { return r.drained(ctx, "history") })
	if n, err := r.ch.CountMessages(ctx, conv); err != nil || n != old+recent {
		t.Fatalf("after a replay ClickHouse counts %d messages (%v), want %d", n, err, old+recent)
	}

	// Retention takes the 40-day-old messages out of Redis.
	ex, err := expiry.New(expiry.Config{Clock: func() time.Time { return time.UnixMilli(r.now.Load()) }}, r.store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ex.SweepOnce(ctx); err != nil {
		t.Fatal(err)
	}

	alice := client.New(r.base, mintFor(t, "alice"), nil)
	page, _, err := alice.PageBefore(ctx, conv, 0, 200)
	if err != nil {
		t.Fatal(err)
	}
	if page.FirstSeq != old+1 {
		t.Fatalf("the Redis window starts at %d, want %d (the old messages expired)", page.FirstSeq, old+1)
	}
	seen := map[uint64]int{}
	for _, m := range page.Messages {
		seen[m.Seq]++
	}
	for before, pages := page.FirstSeq, 0; ; pages++ {
		h, _, err := alice.History(ctx, conv, 0, before, 50)
		if err != nil {
			t.Fatalf("history below %d: %v", before, err)
		}
		for _, m := range h.Messages {
			seen[m.Seq]++
			if string(m.Body) != fmt.Sprint("message ", m.Seq) {
				t.Errorf("history seq %d has body %q", m.Seq, m.Body)
			}
		}
		if !h.HasMore || len(h.Messages) == 0 {
			break
		}
		before = h.Messages[0].Seq
		if pages > 10 {
			t.Fatal("history pages do not end")
		}
	}
	for seq := uint64(1); seq <= old+recent; seq++ {
		if seen[seq] != 1 {
			t.Errorf("seq %d seen %d times across Redis and history pages, want once", seq, seen[seq])
		}
	}
	if len(seen) != old+recent {
		t.Errorf("pages hold %d seqs, want %d", len(seen), old+recent)
	}
}

// replaySequenced produces the first n sequenced records of conv again, as
// a crashed sink's uncommitted batch would be re-read.
func (r *roamingRig) replaySequenced(ctx context.Context, t *testing.T, conv string, n int) int {
	t.Helper()
	msgs, err := r.ch.Range(ctx, conv, 0, 1, uint64(n))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range msgs {
		v, err := proto.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.prod.ProduceSync(ctx, &kgo.Record{Topic: schemas.TopicSequenced, Key: []byte(conv), Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return len(msgs)
}

// drained reports whether group has committed everything produced so far.
func (r *roamingRig) drained(ctx context.Context, group string) (bool, error) {
	lags, err := kadm.NewClient(r.prod).Lag(ctx, group)
	if err != nil {
		return false, err
	}
	l, ok := lags[group]
	if !ok || l.Error() != nil {
		return false, l.Error()
	}
	return l.Lag.Total() == 0, nil
}

func mintFor(t *testing.T, user string) string {
	t.Helper()
	kr, err := auth.New(auth.Config{Secret: []byte(testSecret)})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := kr.Mint(user, "tablet", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
