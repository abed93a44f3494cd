package fanout

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// A conversation whose timeline someone SET to a string can never be
// sequenced: each of its records is dead-lettered naming the conversation
// and WRONGTYPE, gets no seq, the offsets are committed and the next
// record of the same conversation (so of the same partition) goes the same
// way, while other conversations go on. Repaired, the dead letters
// produced again get the next seqs: one message per seq, none lost.
func TestAConversationWhoseTimelineIsAStringIsDeadLetteredAndThePartitionMovesOn(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHarness(t, Config{Metrics: reg})
	h.runner(h.fanout(nil))
	h.produce(records(msg("g", "create", "a", join("a", "b", "c")), msg("d", "hi", "a", to("b"))))
	waitFor(t, "the conversations are created", h.committedToEnd)

	ctx := context.Background()
	tl := h.store.Keys().Timeline("g")
	saved, err := h.rdb.LRange(ctx, tl, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.rdb.Del(ctx, tl).Err(); err != nil {
		t.Fatal(err)
	}
	if err := h.rdb.Set(ctx, tl, "someone's string", 0).Err(); err != nil {
		t.Fatal(err)
	}
	sent := []*schemas.Message{msg("g", "first", "b"), msg("g", "next", "c", mentions("a"))}
	for i, m := range sent {
		rec := record(m)
		h.produce([]*kgo.Record{rec, record(msg("d", fmt.Sprint("also-", i), "b", to("a")))})
		waitFor(t, fmt.Sprintf("%s is committed", m.GetClientMsgId()), h.committedToEnd)

		dead := h.deadLetters()
		if len(dead) != i+1 {
			t.Fatalf("%d dead letters after %s, want %d", len(dead), m.GetClientMsgId(), i+1)
		}
		reason, _ := header(dead[i], schemas.HeaderDeadReason)
		for _, want := range []string{"not sequenced", "g", "WRONGTYPE", tl} {
			if !strings.Contains(reason, want) {
				t.Fatalf("dead letter of %s: reason %q does not say %q", m.GetClientMsgId(), reason, want)
			}
		}
		if code, _ := header(dead[i], schemas.HeaderDeadCode); code != schemas.RefusalUnavailable {
			t.Fatalf("dead letter of %s: code %q, want %s", m.GetClientMsgId(), code, schemas.RefusalUnavailable)
		}
		if !bytes.Equal(dead[i].Value, rec.Value) {
			t.Fatalf("the dead letter of %s does not carry the message", m.GetClientMsgId())
		}
		if seq := h.seqOf("g"); seq != 1 {
			t.Fatalf("g's seq is %d after %s, want 1: nothing sequenced", seq, m.GetClientMsgId())
		}
		if got := h.sequencedOnTopic(); len(got["g"]) != 1 || len(got["d"]) != i+2 {
			t.Fatalf("im.sequenced holds %v after %s, want g 1 and d 1..%d", got, m.GetClientMsgId(), i+2)
		}
	}
	if n := counterWith(t, reg, "offlinebox_fanout_store_dead_lettered_total", "call", "sequence"); n != 2 {
		t.Fatalf("records dead-lettered for sequencing: %v, want 2", n)
	}

	if err := h.rdb.Del(ctx, tl).Err(); err != nil {
		t.Fatal(err)
	}
	if err := h.rdb.RPush(ctx, tl, saved).Err(); err != nil {
		t.Fatal(err)
	}
	for range 2 { // and once more: a replay of the replay changes nothing
		var again []*kgo.Record
		for _, d := range h.deadLetters() {
			again = append(again, &kgo.Record{Topic: schemas.TopicMessages, Key: d.Key, Value: d.Value})
		}
		h.produce(again)
	}
	waitFor(t, "the dead letters produced again are committed", h.committedToEnd)
	if seq := h.seqOf("g"); seq != 3 || len(h.deadLetters()) != 2 {
		t.Fatalf("g holds %d seqs and %d dead letters after the replay, want 3 and still 2", seq, len(h.deadLetters()))
	}
	h.checkInboxes("g") // contiguous, no client_msg_id twice, every inbox right
	if got := h.sequencedOnTopic()["g"]; len(got) != 3 {
		t.Fatalf("im.sequenced holds seqs %v of g, want 1..3", got)
	}
}

// isSequenceCall: a script call whose keys name a timeline.
func isSequenceCall(cmd redis.Cmder) bool {
	name := cmd.Name()
	if name != "evalsha" && name != "eval" {
		return false
	}
	for _, a := range cmd.Args() {
		if k, ok := a.(string); ok && strings.HasSuffix(k, ":tl") {
			return true
		}
	}
	return false
}

// A server that stops answering a sequencing call is a store that is
// down: the batch fails and is retried until the server is back, nothing
// is dead-lettered, and every record gets its one seq.
func TestAServerThatStopsAnsweringASequencingCallIsWaitedForAndNothingIsDeadLettered(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHarness(t, Config{Metrics: reg})
	admin := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t)})
	t.Cleanup(func() {
		admin.Do(context.Background(), "CLIENT", "UNPAUSE")
		_ = admin.Close()
	})
	sick := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t), MaxRetries: -1, ReadTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = sick.Close() })
	pause := &pauseOnFirst{admin: admin, pause: 1500 * time.Millisecond, matching: isSequenceCall}
	sick.AddHook(pause)
	h.runner(h.fanout(sick))
	h.produce(records(msg("g", "create", "a", join("a", "b", "c")), msg("g", "m2", "b", mentions("c")),
		msg("d", "hi", "a", to("b"))))
	waitFor(t, "every record is committed", h.committedToEnd)

	if !pause.paused.Load() {
		t.Fatal("the server was never paused; the test proves nothing")
	}
	if dead := h.deadLetters(); len(dead) != 0 {
		t.Fatalf("%d dead letters while the server was only paused", len(dead))
	}
	if n := counterWith(t, reg, "offlinebox_fanout_store_dead_lettered_total", "call", "sequence"); n != 0 {
		t.Fatalf("%v records dead-lettered for sequencing while the server was paused", n)
	}
	h.checkInboxes("g")
	h.checkInboxes("d")
	if got := h.sequencedOnTopic(); len(got["g"]) != 2 || len(got["d"]) != 1 {
		t.Fatalf("im.sequenced holds %v, want g 1..2 and d 1", got)
	}
}

// counterWith is the value of the series of a counter vector with one
// label's value (0 when absent).
func counterWith(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	if m := seriesWith(t, reg, name, label, value); m != nil {
		return m.GetCounter().GetValue()
	}
	return 0
}

// seriesWith is the series of a metric vector with one label's value
// (nil when absent).
func seriesWith(t *testing.T, reg *prometheus.Registry, name, label, value string) *dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m
				}
			}
		}
	}
	return nil
}

// A group that grows large while a member's seq in its members' hash is
// unreadable cannot be converted: the records keep their seqs and reach
// im.sequenced, are dead-lettered saying no inbox got them, and the
// partition moves on. Repaired, the dead letters produced again convert
// every member's inbox and deliver them: same seqs, nothing twice.
func TestAGroupWhoseMembersCannotBeListedIsDeadLetteredAndConvertedOnReplay(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHarness(t, Config{Metrics: reg, Store: redisstore.Config{LargeGroupThreshold: 5}})
	h.runner(h.fanout(nil))
	members := users("u", 4)
	h.produce(records(msg("lg", "create", members[0], join(members...))))
	waitFor(t, "the group is created", h.committedToEnd)

	ctx := context.Background()
	mem := h.store.Keys().Members("lg")
	if err := h.rdb.HSet(ctx, mem, "zz", "not a seq").Err(); err != nil {
		t.Fatal(err)
	}
	grow := record(msg("lg", "grow", members[0], join("u4", "u5", "u6")))
	h.produce([]*kgo.Record{grow})
	waitFor(t, "the join that makes the group large is committed", h.committedToEnd)
	dead := h.deadLetters()
	if len(dead) != 1 || !bytes.Equal(dead[0].Value, grow.Value) {
		t.Fatalf("%d dead letters, want the join's", len(dead))
	}
	reason, _ := header(dead[0], schemas.HeaderDeadReason)
	for _, want := range []string{"seq 2 of lg", "no inbox got it", "members", "malformed"} {
		if !strings.Contains(reason, want) {
			t.Fatalf("reason %q does not say %q", reason, want)
		}
	}
	if seq, _ := header(dead[0], schemas.HeaderDeadSeq); seq != "2" {
		t.Fatalf("the letter says seq %q, want 2: the join was sequenced", seq)
	}
	if got := h.sequencedOnTopic()["lg"]; len(got) != 2 {
		t.Fatalf("im.sequenced holds seqs %v of lg, want 1..2", got)
	}
	if typ := h.inboxField(members[1], "lg", 't'); typ == "L" {
		t.Fatalf("%s's inbox was converted although the members could not be listed", members[1])
	}
	if n := counterWith(t, reg, "offlinebox_fanout_store_dead_lettered_total", "call", "members"); n != 1 {
		t.Fatalf("records dead-lettered for the member listing: %v, want 1", n)
	}

	if err := h.rdb.HDel(ctx, mem, "zz").Err(); err != nil {
		t.Fatal(err)
	}
	h.produce([]*kgo.Record{{Topic: schemas.TopicMessages, Key: dead[0].Key, Value: dead[0].Value}})
	waitFor(t, "the dead letter produced again is committed", h.committedToEnd)
	if seq := h.seqOf("lg"); seq != 2 || len(h.deadLetters()) != 1 {
		t.Fatalf("lg holds %d seqs and %d dead letters after the replay, want 2 and still 1", seq, len(h.deadLetters()))
	}
	for _, u := range members {
		if typ := h.inboxField(u, "lg", 't'); typ != "L" {
			t.Fatalf("%s: form %q after the replay, want L", u, typ)
		}
	}
	if lgc := h.rdb.HGet(ctx, h.store.Keys().ConvMeta("lg"), "lgc").Val(); lgc != "1" {
		t.Fatalf("the conversion mark is %q after the replay, want 1", lgc)
	}
	h.checkInboxes("lg")
}

// A record produced again whose original entry in the timeline no longer
// decodes (someone wrote over part of it) is a duplicate that can never be
// rebuilt: it alone is dead-lettered, naming its seq, and the batch's
// other records, and the conversation's next ones, go on; no seq is given
// twice.
func TestADuplicateWhoseStoredEntryDoesNotDecodeIsDeadLetteredAlone(t *testing.T) {
	h := newHarness(t, Config{})
	h.runner(h.fanout(nil))
	first := msg("d", "hi", "a", to("b"))
	h.produce(records(first, msg("d", "there", "b", to("a"))))
	waitFor(t, "the conversation is created", h.committedToEnd)

	ctx := context.Background()
	tl := h.store.Keys().Timeline("d")
	entries, err := h.rdb.LRange(ctx, tl, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	at := -1
	for i, e := range entries {
		if strings.HasPrefix(e, "1:") {
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("no entry of seq 1 in %v", entries)
	}
	// The id stays (so the record is still known as a duplicate); the
	// write time is no longer a number.
	_, rest, _ := strings.Cut(strings.TrimPrefix(entries[at], "1:"), ":")
	if err := h.rdb.LSet(ctx, tl, int64(at), "1:soon:"+rest).Err(); err != nil {
		t.Fatal(err)
	}

	next := msg("d", "again", "a", to("b"))
	h.produce(records(first, next))
	waitFor(t, "the duplicate and the next record are committed", h.committedToEnd)

	dead := h.deadLetters()
	if len(dead) != 1 {
		t.Fatalf("%d dead letters, want 1 (the duplicate)", len(dead))
	}
	reason, _ := header(dead[0], schemas.HeaderDeadReason)
	for _, want := range []string{"duplicate of seq 1", "d", "decode"} {
		if !strings.Contains(reason, want) {
			t.Fatalf("dead letter reason %q does not say %q", reason, want)
		}
	}
	if seq, _ := header(dead[0], schemas.HeaderDeadSeq); seq != "1" {
		t.Fatalf("the letter says seq %q, want 1: the duplicate has that seq already", seq)
	}
	if !bytes.Equal(dead[0].Value, record(first).Value) {
		t.Fatal("the dead letter does not carry the duplicate")
	}
	if seq := h.seqOf("d"); seq != 3 {
		t.Fatalf("d's seq is %d, want 3: the next record got the next seq, the duplicate none", seq)
	}
	if got := h.sequencedOnTopic()["d"]; len(got) != 3 {
		t.Fatalf("im.sequenced holds seqs %v of d, want 1..3 once each", got)
	}

	if err := h.rdb.LSet(ctx, tl, int64(at), entries[at]).Err(); err != nil {
		t.Fatal(err)
	}
	h.checkInboxes("d")
}
