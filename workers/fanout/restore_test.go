package fanout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/embedded"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/seal"
)

// newHarnessOnOwnRedis is a harness on a redis-server of its own, started
// with opts (its Dir a temporary one), for tests that restart or
// reconfigure it.
func newHarnessOnOwnRedis(t *testing.T, opts embedded.RedisOptions) (*embedded.Process, *harness) {
	t.Helper()
	life, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	opts.Dir = t.TempDir()
	srv, err := embedded.StartRedis(life, opts)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	_, addrs := testenv.Kafka(t, 4, schemas.TopicMessages, schemas.TopicSequenced, schemas.TopicDeadLetter)
	return srv, newHarnessOn(t, rdb, testenv.UniquePrefix(t), addrs, Config{})
}

// handleUntilDone retries a batch as the runner does, until it succeeds.
func handleUntilDone(t *testing.T, f *Fanout, recs []*kgo.Record) {
	t.Helper()
	var err error
	for attempt := 0; attempt < 100; attempt++ {
		if _, err = f.Handle(context.Background(), recs); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("Handle kept failing: %v", err)
}

// checkNoSeqTwice reads every record of im.sequenced: no (conversation,
// epoch, seq) may carry two client_msg_ids.
func (h *harness) checkNoSeqTwice() {
	h.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.addrs...), kgo.ConsumeTopics(schemas.TopicSequenced),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		h.t.Fatal(err)
	}
	defer cl.Close()
	held := map[string]string{}
	for idle := 0; idle < 2; {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		if fs.NumRecords() == 0 {
			idle++
			continue
		}
		fs.EachRecord(func(r *kgo.Record) {
			sq, err := schemas.DecodeSequenced(r.Value)
			if err != nil {
				h.t.Fatalf("im.sequenced holds %v", err)
			}
			at := fmt.Sprintf("%s epoch %d seq %d", sq.GetMessage().GetConvId(), sq.GetEpoch(), sq.GetSeq())
			id := sq.GetMessage().GetClientMsgId()
			if prev, ok := held[at]; ok && prev != id {
				h.t.Errorf("%s was handed out twice: %s and %s", at, prev, id)
			}
			held[at] = id
		})
	}
}

// head is a conversation's epoch and seq.
func (h *harness) head(conv string) redisstore.ConvHead {
	h.t.Helper()
	heads, err := h.store.ConvHeads(context.Background(), []string{conv})
	if err != nil {
		h.t.Fatal(err)
	}
	return heads[conv]
}

// A redis-server that comes back from an older state (a host crash under
// appendfsync everysec, a restart from a snapshot) has lost seqs whose
// offsets were committed. Whether the worker runs on through the restart
// or a new one starts, the lost records come back from im.sequenced with
// their seqs and no seq is handed out twice.
func TestRedisBackFromAnOlderSnapshotHandsOutNoSeqTwice(t *testing.T) {
	for _, tc := range []struct {
		name      string
		newWorker bool
	}{
		{"the worker runs on through the restart", false},
		{"a new worker starts on the restored server", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			srv, h := newHarnessOnOwnRedis(t, embedded.RedisOptions{AppendOnly: true})
			f := h.fanout(nil)

			ms := scenario(3)
			third := len(ms) / 3
			handle(t, f, records(ms[:third]...))
			snap := filepath.Join(t.TempDir(), "snap.rdb")
			if err := embedded.SnapshotRedis(ctx, srv, snap); err != nil {
				t.Fatal(err)
			}
			// Sequenced, produced and (the runner would now) committed:
			// these are what the server loses, with a group created
			// after the snapshot (its meta vanishes entirely).
			handle(t, f, records(ms[third:2*third]...))
			late := records(msg("late", "late-1", "ann", join("ann", "bob", "cid")),
				msg("late", "late-2", "bob", mentions("cid")), msg("late", "late-3", "cid"))
			handle(t, f, late)
			lateHead := h.head("late")
			if err := srv.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := embedded.ReplaceRedisData(srv, snap); err != nil {
				t.Fatal(err)
			}
			if err := srv.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.newWorker {
				f = h.fanout(nil)
			}
			handleUntilDone(t, f, records(ms[2*third:]...))

			h.checkNoSeqTwice()
			h.checkAll(distinctIDs(ms))
			h.checkProduced(distinctIDs(ms))
			if tr := h.checkInboxes("late"); tr.seq != 3 || len(tr.delivered["cid"]) != 3 {
				t.Errorf("the late group came back with %d seqs, cid got %d", tr.seq, len(tr.delivered["cid"]))
			}
			if got := h.head("late"); got != lateHead {
				t.Errorf("the late group came back as %+v, it was %+v", got, lateHead)
			}
		})
	}
}

// A server instance the worker has not verified refuses every write of
// the sequencing path, whatever the call.
func TestUnverifiedInstanceRefusesEveryFencedWrite(t *testing.T) {
	h := newHarness(t, Config{})
	f := h.fanout(nil)
	ms := scenario(4)
	handle(t, f, records(ms[:10]...))
	before := h.snapshot()
	f.restore.fence.Verify([]string{"0000000000000000000000000000000000000000"})
	_, err := f.handle(context.Background(), records(ms[10:]...))
	if !errors.Is(err, redisstore.ErrFenced) {
		t.Fatalf("Handle on an unverified instance: %v, want ErrFenced", err)
	}
	if after := h.snapshot(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("a refused batch changed redis")
	}
}

// Sealed bodies survive a Redis that loses its tail: the data key of a
// conversation created after the snapshot comes back from the changelog,
// the restored bodies are the changelog's bytes, and every body opens
// with a sealer that never saw the key before.
func TestSealedBodiesStillOpenAfterRedisLosesItsTailAndItsDataKeys(t *testing.T) {
	ctx := context.Background()
	life, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	srv, err := embedded.StartRedis(life, embedded.RedisOptions{Dir: t.TempDir(), AppendOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	_, addrs := testenv.Kafka(t, 4, schemas.TopicMessages, schemas.TopicSequenced, schemas.TopicDeadLetter)
	prefix := testenv.UniquePrefix(t)
	plain, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ring := sealTestRing(t)
	cfg := Config{}
	cfg.Store.Sealer = seal.NewSealer(ring, plain, 0)
	h := newHarnessOn(t, rdb, prefix, addrs, cfg)
	f := h.fanout(nil)

	handle(t, f, records(msg("early", "e-1", "ann", join("ann", "bob")), msg("early", "e-2", "bob")))
	snap := filepath.Join(t.TempDir(), "snap.rdb")
	if err := embedded.SnapshotRedis(ctx, srv, snap); err != nil {
		t.Fatal(err)
	}
	handle(t, f, records(msg("early", "e-3", "ann"),
		msg("late", "l-1", "ann", join("ann", "cid")), msg("late", "l-2", "cid"), msg("late", "l-3", "ann")))
	keyBefore, err := plain.DataKey(ctx, "late")
	if err != nil || keyBefore == "" {
		t.Fatalf("late has no data key before the loss (%q, %v)", keyBefore, err)
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := embedded.ReplaceRedisData(srv, snap); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if k, _ := plain.DataKey(ctx, "late"); k != "" {
		t.Fatalf("the snapshot already holds late's data key")
	}
	// a new worker whose sealer has nothing cached
	cfg.Store.Sealer = seal.NewSealer(ring, plain, 0)
	h2 := newHarnessOn(t, rdb, prefix, addrs, cfg)
	f = h2.fanout(nil)
	handleUntilDone(t, f, records(msg("early", "e-4", "bob"), msg("late", "l-4", "cid")))

	if k, err := plain.DataKey(ctx, "late"); err != nil || k != keyBefore {
		t.Fatalf("late's data key came back as %q (%v), it was %q", k, err, keyBefore)
	}
	fresh := seal.NewSealer(ring, plain, 0)
	for conv, want := range map[string]int{"early": 3, "late": 3} {
		head, entries, err := plain.TimelineEntries(ctx, conv, 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		opened := 0
		for _, sq := range entries {
			m := sq.GetMessage()
			if m.GetKind() != schemas.Kind_KIND_MESSAGE {
				continue
			}
			if m.GetSealedEpoch() == 0 {
				t.Errorf("%s/%d is stored in the clear", conv, sq.GetSeq())
				continue
			}
			if _, err := fresh.OpenBody(ctx, conv, head.Epoch, sq.GetSeq(), m); err != nil {
				t.Errorf("%s/%d does not open after the restore: %v", conv, sq.GetSeq(), err)
				continue
			}
			opened++
		}
		if opened != want {
			t.Errorf("%s: %d bodies open, want %d", conv, opened, want)
		}
	}
	h2.checkNoSeqTwice()
}

// A restore that meets a conversation it can never put back (a key of it
// holds the wrong type) counts it as a conflict, for a rebuild, and goes
// on without it: the other conversations come back and the next batch is
// handled. Before, the worker crashed (a timeline) or restored for ever,
// every partition held behind it (a meta).
func TestARestoreMeetingAKeyOfTheWrongTypeGoesOnWithoutThatConversation(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  func(k redisstore.Keys) string
	}{
		{"its timeline", func(k redisstore.Keys) string { return k.Timeline("g") }},
		{"its meta", func(k redisstore.Keys) string { return k.ConvMeta("g") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			handle(t, h.fanout(nil), records(msg("g", "create", "a", join("a", "b")), msg("g", "g-1", "b"),
				msg("d", "hi", "a", to("b"))))

			// The server lost its fence and d entirely, and g's key is
			// broken: the next worker replays the whole changelog.
			ctx := context.Background()
			k := h.store.Keys()
			lost, err := h.rdb.Keys(ctx, h.prefix+"{c:d}*").Result()
			if err != nil || len(lost) == 0 {
				t.Fatalf("d's keys: %v %v", lost, err)
			}
			if err := h.rdb.Del(ctx, append(lost, k.Applied(0))...).Err(); err != nil {
				t.Fatal(err)
			}
			bad := tc.key(k)
			if err := h.rdb.Del(ctx, bad).Err(); err != nil {
				t.Fatal(err)
			}
			if err := h.rdb.Set(ctx, bad, "someone's string", 0).Err(); err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			cfg := h.cfg
			cfg.Metrics = reg
			handle(t, h.fanoutWith(nil, cfg), records(msg("d", "after", "b", to("a"))))
			if got := h.head("d"); got.Seq != 2 {
				t.Fatalf("d came back with seq %d, want 2: hi restored, then after", got.Seq)
			}
			if n := counter(t, reg, "offlinebox_fanout_restore_conflicts_total"); n < 1 {
				t.Fatalf("restore conflicts: %v, want g counted", n)
			}
			// What the restore met was logged, not dead-lettered: the
			// dead-letter series count only letters produced.
			if n := counterWith(t, reg, "offlinebox_fanout_store_dead_lettered_total", "call", "sequence"); n != 0 {
				t.Fatalf("records counted as dead-lettered for sequencing: %v, want 0 (none was produced)", n)
			}
			if tc.name == "its timeline" {
				if n := counterWith(t, reg, "offlinebox_fanout_restore_unapplied_records_total", "call", "sequence"); n < 1 {
					t.Fatalf("records the restore could not sequence again: %v, want g's", n)
				}
			}
			h.checkNoSeqTwice()
		})
	}
}

// logSink is a log sink safe for the worker's goroutines.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logSink) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines are the lines logged so far that contain every one of words.
func (b *logSink) lines(words ...string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if l != "" && !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(l, w) }) {
			out = append(out, l)
		}
	}
	return out
}

// A restore whose sequencing of a conversation can never succeed (its
// timeline holds the wrong type) says so once: that the conversation is
// held, not that its records were dead-lettered (a restore produces no
// letters: the records are im.sequenced's), with the sequencing call's own
// error as the reason, in the log line and in the hold.
func TestARestoreThatCannotSequenceAConversationLogsItOnceAsHeldWithTheFailure(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, Config{})
	handle(t, h.fanout(nil), records(msg("g", "create", "a", join("a", "b")), msg("g", "g-1", "b")))
	k := h.store.Keys()
	if err := h.rdb.Del(ctx, k.Applied(0), k.Timeline("g")).Err(); err != nil {
		t.Fatal(err)
	}
	if err := h.rdb.Set(ctx, k.Timeline("g"), "someone's string", 0).Err(); err != nil {
		t.Fatal(err)
	}

	logs := &logSink{}
	cfg := h.cfg
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	handle(t, h.fanoutWith(nil, cfg), records(msg("d", "hi", "a", to("b")))) // the restore runs first
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the worker logged:\n%s", strings.Join(logs.lines(), "\n"))
		}
	})

	about := logs.lines("conv=g ")
	if len(about) != 1 {
		t.Fatalf("%d lines about g, want one:\n%s", len(about), strings.Join(about, "\n"))
	}
	for _, w := range []string{"cannot be put back", "held", "WRONGTYPE"} {
		if !strings.Contains(about[0], w) {
			t.Errorf("the line about g does not say %q: %s", w, about[0])
		}
	}
	if dead := logs.lines("dead-letter"); len(dead) > 0 {
		t.Errorf("a restore logged records as dead-lettered:\n%s", strings.Join(dead, "\n"))
	}
	why, held, err := h.store.HeldReason(ctx, "g")
	if err != nil || !held || !strings.Contains(why, "WRONGTYPE") || strings.Contains(why, "not sequenced") {
		t.Errorf("g's hold says %q (held %v, %v), want the sequencing call's error", why, held, err)
	}
}

// A restore that cannot put a conversation back leaves it below seqs the
// changelog gave: here Redis lost g's last seq and g's timeline holds the
// wrong type. The conversation is held, so once someone repairs the key a
// new record is dead-lettered (OBHELD) instead of taking the seq the lost
// record has in im.sequenced; a rebuild releases it (see redisstore).
func TestAConversationARestoreCouldNotPutBackIsHeldAndHandsOutNoSeqAgain(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, Config{})
	f := h.fanout(nil)
	handle(t, f, records(msg("g", "create", "a", join("a", "b")), msg("g", "g-1", "b")))
	k := h.store.Keys()
	gKeys, err := h.rdb.Keys(ctx, h.prefix+"{c:g}*").Result()
	if err != nil || len(gKeys) == 0 {
		t.Fatalf("g's keys: %v %v", gKeys, err)
	}
	saved := map[string]string{}
	for _, key := range gKeys {
		if saved[key], err = h.rdb.Dump(ctx, key).Result(); err != nil {
			t.Fatal(err)
		}
	}
	handle(t, f, records(msg("g", "g-2", "a"))) // seq 3: lost below, kept by im.sequenced

	putBack := func(key string) {
		t.Helper()
		if err := h.rdb.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		if err := h.rdb.Restore(ctx, key, 0, saved[key]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range gKeys {
		putBack(key)
	}
	if err := h.rdb.Del(ctx, k.Applied(0)).Err(); err != nil {
		t.Fatal(err)
	}
	tl := k.Timeline("g")
	if err := h.rdb.Del(ctx, tl).Err(); err != nil {
		t.Fatal(err)
	}
	if err := h.rdb.Set(ctx, tl, "someone's string", 0).Err(); err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	cfg := h.cfg
	cfg.Metrics = reg
	f = h.fanoutWith(nil, cfg)
	handle(t, f, records(msg("d", "hi", "a", to("b")))) // the restore runs first
	if n := counter(t, reg, "offlinebox_fanout_restore_held_total"); n < 1 {
		t.Fatalf("conversations held: %v, want g", n)
	}
	why, err := h.rdb.Get(ctx, k.Held("g")).Result()
	if err != nil || !strings.Contains(why, "WRONGTYPE") {
		t.Fatalf("g's hold says %q (%v), want why the restore gave it up", why, err)
	}

	putBack(tl) // repaired, but still at seq 2: seq 3 is the lost g-2's
	dead := handle(t, f, records(msg("g", "g-new", "b")))
	if len(dead) != 1 || !strings.Contains(dead[0].Reason, "OBHELD") {
		t.Fatalf("dead letters %v, want g-new's, refused as held", dead)
	}
	if got := h.head("g"); got.Seq != 2 {
		t.Fatalf("g's counter is %d, want 2: nothing sequenced while held", got.Seq)
	}
	h.checkNoSeqTwice()
}
