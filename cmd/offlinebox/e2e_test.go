package main

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const testSecret = "end-to-end-test-secret-0123456789"

// startPipeline runs every worker and the API against the test servers and
// returns the API's base URL and the stack it runs on.
func startPipeline(t *testing.T) (string, *stackConfig) {
	t.Helper()
	return startPipelineWith(t, nil)
}

// startPipelineWith is startPipeline with edit applied to the stack first.
func startPipelineWith(t *testing.T, edit func(*stackConfig)) (string, *stackConfig) {
	t.Helper()
	_, brokers := testenv.Kafka(t, 4, schemas.TopicMessages, schemas.TopicSequenced, schemas.TopicReceipts, schemas.TopicDeadLetter)
	cfg := &stackConfig{
		Kafka: brokers[0], Redis: testenv.RedisAddr(t), ClickHouse: testenv.ClickHouseAddr(t),
		ClickHouseDB: testenv.UniqueDatabase(t), ClickHouseUser: "default",
		Prefix: testenv.UniquePrefix(t), Listen: "127.0.0.1:0", JWTSecret: testSecret, Partitions: 4,
	}
	if edit != nil {
		edit(cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- runPipeline(ctx, cfg, func(a net.Addr) { ready <- a }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("pipeline stopped with %v", err)
		}
	})
	select {
	case a := <-ready:
		return "http://" + a.String(), cfg
	case err := <-done:
		t.Fatalf("pipeline did not start: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("pipeline did not start in a minute")
	}
	return "", nil
}

func produce(t *testing.T, brokers []string, msgs ...*schemas.Message) {
	t.Helper()
	prod, err := stream.NewProducer(brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, m := range msgs {
		v, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		rec := &kgo.Record{Topic: schemas.TopicMessages, Key: []byte(m.ConvId), Value: v}
		if err := prod.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", m.ClientMsgId, err)
		}
	}
}

func deviceOf(t *testing.T, base, user string) *client.Client {
	t.Helper()
	kr, err := auth.New(auth.Config{Secret: []byte(testSecret)})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := kr.Mint(user, "phone", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return client.New(base, tok, nil)
}

// TestMessagesProducedToKafkaReachEveryRecipientThroughTheAPIAndClickHouse
// carries a direct and a group conversation through fanout, convindex,
// history and the API.
func TestMessagesProducedToKafkaReachEveryRecipientThroughTheAPIAndClickHouse(t *testing.T) {
	base, cfg := startPipeline(t)
	group := func(id, sender, body string, kind schemas.Kind, recipients ...string) *schemas.Message {
		return &schemas.Message{ClientMsgId: id, ConvId: "team", ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: sender,
			Kind: kind, Recipients: recipients, Body: []byte(body), ContentType: "text/plain"}
	}
	produce(t, cfg.kafkaBrokers(),
		group("team-create", "bob", "", schemas.Kind_KIND_MEMBER_JOIN, "bob", "alice", "carol"),
		&schemas.Message{ClientMsgId: "dm-1", ConvId: "dm-alice-bob", ConvType: schemas.ConvType_CONV_TYPE_DIRECT,
			Sender: "bob", Recipients: []string{"alice"}, Kind: schemas.Kind_KIND_MESSAGE, Body: []byte("hi alice")},
		group("team-1", "bob", "standup at ten", schemas.Kind_KIND_MESSAGE),
		group("team-2", "carol", "on my way", schemas.Kind_KIND_MESSAGE),
		// A producer retry: the same client_msg_id again.
		group("team-2", "carol", "on my way", schemas.Kind_KIND_MESSAGE),
	)
	// What each user should hold: conversation -> client_msg_ids in seq
	// order, and the unread each should see.
	type want struct {
		msgs   map[string][]string
		unread map[string]uint64
	}
	teamAll := []string{"team-create", "team-1", "team-2"}
	wants := map[string]want{
		"alice": {msgs: map[string][]string{"team": teamAll, "dm-alice-bob": {"dm-1"}},
			// the creation notice is no one's unread
			unread: map[string]uint64{"team": 2, "dm-alice-bob": 1}},
		// Sending marks read for the sender: bob's unread counts carol's only.
		"bob":   {msgs: map[string][]string{"team": teamAll, "dm-alice-bob": {"dm-1"}}, unread: map[string]uint64{"team": 1, "dm-alice-bob": 0}},
		"carol": {msgs: map[string][]string{"team": teamAll}, unread: map[string]uint64{"team": 0}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for user, w := range wants {
		dev := deviceOf(t, base, user)
		last := map[string]uint64{}
		for conv, ids := range w.msgs {
			last[conv] = uint64(len(ids))
		}
		waitForList(ctx, t, dev, user, w.unread, last)
		held := client.NewHeld()
		if _, err := dev.CatchUp(ctx, held, client.CatchUpOptions{}); err != nil {
			t.Fatalf("%s catches up: %v", user, err)
		}
		if len(held.Convs) != len(w.msgs) {
			t.Errorf("%s holds %d conversations, want %d", user, len(held.Convs), len(w.msgs))
		}
		for conv, ids := range w.msgs {
			hc := held.Convs[conv]
			if hc == nil {
				t.Errorf("%s holds nothing of %s", user, conv)
				continue
			}
			for i, id := range ids {
				m, ok := hc.Msgs[client.Cursor{Seq: uint64(i + 1), Epoch: hc.Epoch}]
				if !ok || m.ClientMsgID != id {
					t.Errorf("%s %s seq %d = %+v, want %s (seqs contiguous from 1)", user, conv, i+1, m, id)
				}
			}
			if len(hc.Msgs) != len(ids) {
				t.Errorf("%s holds %d messages of %s, want %d", user, len(hc.Msgs), conv, len(ids))
			}
		}
	}
	assertInClickHouse(ctx, t, cfg, map[string]uint64{"team": 3, "dm-alice-bob": 1})
}

// waitForList polls the conversation list (the pipeline is asynchronous)
// until it shows every conversation with the unread wanted and delivered
// up to the last seq wanted, and fails with what it saw last. An unread
// alone is met early: the creation notice is no one's unread, so a
// member shows 0 before the messages reach their inbox. A nil last waits
// for the unread only.
func waitForList(ctx context.Context, t *testing.T, dev *client.Client, user string, want, last map[string]uint64) {
	t.Helper()
	var got, gotLast map[string]uint64
	for ctx.Err() == nil {
		list, _, err := dev.Conversations(ctx, 50)
		if err != nil {
			t.Fatalf("%s lists conversations: %v", user, err)
		}
		got, gotLast = map[string]uint64{}, map[string]uint64{}
		for _, c := range list.Conversations {
			got[c.ConvID], gotLast[c.ConvID] = c.Unread, c.LastSeq
		}
		if equalCounts(got, want) && (last == nil || equalCounts(gotLast, last)) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s sees unread %v up to %v, want %v up to %v", user, got, gotLast, want, last)
}

func equalCounts(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if got, ok := a[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func assertInClickHouse(ctx context.Context, t *testing.T, cfg *stackConfig, want map[string]uint64) {
	t.Helper()
	ch, err := chstore.Open(ctx, chstore.Config{Addr: cfg.ClickHouse, Database: cfg.ClickHouseDB})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	for conv, n := range want {
		var got uint64
		for ctx.Err() == nil {
			if got, err = ch.CountMessages(ctx, conv); err == nil && got == n {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if got != n {
			t.Errorf("ClickHouse holds %d messages of %s, want %d (last error %v)", got, conv, n, err)
			continue
		}
		page, _, err := ch.History(ctx, conv, 0, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range page {
			if s.GetSeq() != uint64(i+1) {
				t.Errorf("ClickHouse %s row %d has seq %d", conv, i, s.GetSeq())
			}
		}
	}
}

// TestDemoOnceSeedsCatchesUpAndExitsCleanly runs `offlinebox demo --once`
// on its own embedded stack.
func TestDemoOnceSeedsCatchesUpAndExitsCleanly(t *testing.T) {
	testenv.RedisAddr(t) // skips, or fails under make test, without the servers installed
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	err := runDemo(ctx, []string{"--once", "-data", t.TempDir(), "-listen", "127.0.0.1:0", "-metrics-listen", ""}, &out)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	for _, line := range []string{"lost 0, duplicates 0", "with 3 of 3 @mentions", "invariants clean", "502 of 502 sequenced records"} {
		if !bytes.Contains(out.Bytes(), []byte(line)) {
			t.Errorf("summary lacks %q:\n%s", line, out.String())
		}
	}
}
