package fanout

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
)

// A recipient whose inbox key someone SET to a string can never be
// written: the message still reaches the 99 other members and
// im.sequenced, one dead letter names that user, the seq and WRONGTYPE,
// the offset is committed, and the next message of the same conversation
// (so of the same partition) goes through the same way. Once the key is
// repaired, the dead letters produced again reach the user.
func TestARecipientWhoseInboxIsAStringIsDeadLetteredAndThePartitionMovesOn(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHarness(t, Config{Metrics: reg})
	members := append(users("m", 99), "bad")
	h.runner(h.fanout(nil))
	h.produce(records(msg("g", "create", "m000", join(members...))))
	waitFor(t, "the group is created", h.committedToEnd)
	if dead := h.deadLetters(); len(dead) != 0 {
		t.Fatalf("%d dead letters before the inbox was broken", len(dead))
	}

	ctx := context.Background()
	bad := h.store.Keys().Inbox("bad")
	if err := h.rdb.Del(ctx, bad).Err(); err != nil {
		t.Fatal(err)
	}
	if err := h.rdb.Set(ctx, bad, "someone's string", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"first", "next"} {
		seq := uint64(i + 2)
		m := record(msg("g", id, "m001"))
		h.produce([]*kgo.Record{m})
		waitFor(t, fmt.Sprintf("%s is committed", id), h.committedToEnd)

		for _, u := range members[:99] {
			if l := h.inboxField(u, "g", 'l'); l != fmt.Sprint(seq) {
				t.Fatalf("%s's last seq of g is %q after %s, want %d", u, l, id, seq)
			}
		}
		if u := h.inboxField("m050", "g", 'u'); u != fmt.Sprint(seq) {
			t.Fatalf("m050's unread is %q, want %d", u, seq)
		}
		if got := h.sequencedOnTopic()["g"]; len(got) != int(seq) || !got[seq] {
			t.Fatalf("im.sequenced holds seqs %v of g, want 1..%d", got, seq)
		}
		dead := h.deadLetters()
		if len(dead) != i+1 {
			t.Fatalf("%d dead letters after %s, want %d", len(dead), id, i+1)
		}
		d := dead[i]
		reason, _ := header(d, schemas.HeaderDeadReason)
		for _, want := range []string{fmt.Sprintf("seq %d of g", seq), "bad: ", "WRONGTYPE", "1 recipients"} {
			if !strings.Contains(reason, want) {
				t.Fatalf("dead letter of %s: reason %q does not say %q", id, reason, want)
			}
		}
		if got, _ := header(d, schemas.HeaderDeadSeq); got != fmt.Sprint(seq) {
			t.Fatalf("dead letter of %s says seq %q, want %d: it was sequenced", id, got, seq)
		}
		if code, ok := header(d, schemas.HeaderDeadCode); ok {
			t.Fatalf("dead letter of %s carries code %q: a sequenced record is not its sender's refusal", id, code)
		}
		if !bytes.Equal(d.Value, m.Value) {
			t.Fatalf("dead letter of %s does not carry the message", id)
		}
	}
	if v, err := h.rdb.Get(ctx, bad).Result(); err != nil || v != "someone's string" {
		t.Fatalf("the broken key now holds %q (%v)", v, err)
	}
	if n := counter(t, reg, "offlinebox_fanout_inbox_dead_lettered_total"); n != 2 {
		t.Fatalf("inbox updates dead-lettered: %v, want 2", n)
	}

	// Repaired, the user gets both messages from their dead letters
	// produced again: same client_msg_ids, same seqs.
	if err := h.rdb.Del(ctx, bad).Err(); err != nil {
		t.Fatal(err)
	}
	var again []*kgo.Record
	for _, d := range h.deadLetters() {
		again = append(again, &kgo.Record{Topic: schemas.TopicMessages, Key: d.Key, Value: d.Value})
	}
	h.produce(again)
	waitFor(t, "the dead letters produced again are committed", h.committedToEnd)
	if l := h.inboxField("bad", "g", 'l'); l != "3" {
		t.Fatalf("the repaired user's last seq is %q, want 3", l)
	}
	h.checkInboxes("g") // every member's unread and lane, the repaired one's too
	if h.seqOf("g") != 3 || len(h.deadLetters()) != 2 {
		t.Fatalf("g holds %d seqs and %d dead letters after the replay, want 3 and still 2", h.seqOf("g"), len(h.deadLetters()))
	}
}

// pauseOnFirst pauses the server's writes for a while just before the
// first command matching is sent, alone or in a pipeline: the server is
// there but does not answer.
type pauseOnFirst struct {
	admin    *redis.Client
	matching func(redis.Cmder) bool
	paused   atomic.Bool
	pause    time.Duration
}

func (p *pauseOnFirst) DialHook(next redis.DialHook) redis.DialHook { return next }

func (p *pauseOnFirst) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := p.before(ctx, cmd); err != nil {
			return err
		}
		return next(ctx, cmd)
	}
}

func (p *pauseOnFirst) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := p.before(ctx, cmds...); err != nil {
			return err
		}
		return next(ctx, cmds)
	}
}

func (p *pauseOnFirst) before(ctx context.Context, cmds ...redis.Cmder) error {
	for _, c := range cmds {
		if p.matching(c) && !p.paused.Swap(true) {
			return p.admin.Do(ctx, "CLIENT", "PAUSE", p.pause.Milliseconds(), "WRITE").Err()
		}
	}
	return nil
}

// A server that stops answering in the middle of the inbox writes is a
// store that is down: the batch fails and is retried until the server is
// back, nothing is dead-lettered, and every inbox ends right.
func TestAServerThatStopsAnsweringIsWaitedForAndNothingIsDeadLettered(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHarness(t, Config{Metrics: reg})
	admin := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t)})
	t.Cleanup(func() {
		admin.Do(context.Background(), "CLIENT", "UNPAUSE")
		_ = admin.Close()
	})
	sick := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t), MaxRetries: -1, ReadTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = sick.Close() })
	pause := &pauseOnFirst{admin: admin, pause: 1500 * time.Millisecond,
		matching: func(c redis.Cmder) bool { return len(inboxKeysOf(c)) > 0 }}
	sick.AddHook(pause)
	h.runner(h.fanout(sick))
	ms := []*schemas.Message{msg("g", "create", "a", join("a", "b", "c")), msg("g", "m2", "b", mentions("c")),
		msg("d", "hi", "a", to("b"))}
	h.produce(records(ms...))
	waitFor(t, "every record is committed", h.committedToEnd)

	if !pause.paused.Load() {
		t.Fatal("the server was never paused; the test proves nothing")
	}
	if n := counter(t, reg, "offlinebox_fanout_inbox_dead_lettered_total"); n != 0 {
		t.Fatalf("%v inbox updates dead-lettered while the server was paused", n)
	}
	failures := 0.0
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "offlinebox_fanout_inbox_write_failures_total" {
			for _, m := range mf.GetMetric() {
				failures += m.GetCounter().GetValue()
			}
		}
	}
	if failures == 0 {
		t.Fatal("no inbox write failed while the server was paused; the test proves nothing")
	}
	if dead := h.deadLetters(); len(dead) != 0 {
		t.Fatalf("%d dead letters while the server was only paused", len(dead))
	}
	h.checkInboxes("g")
	h.checkInboxes("d")
	if got := h.sequencedOnTopic(); len(got["g"]) != 2 || len(got["d"]) != 1 {
		t.Fatalf("im.sequenced holds %v, want g 1..2 and d 1", got)
	}
}
