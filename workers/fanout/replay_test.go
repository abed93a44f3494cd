package fanout

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

// snapshot renders every key under the harness's prefix with its content,
// but for the changelog fence: a replay is produced again, so the fence
// rightly moves on with the changelog.
func (h *harness) snapshot() map[string]string {
	h.t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	iter := h.rdb.Scan(ctx, 0, h.prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		if strings.Contains(key, "{fence:") {
			continue
		}
		typ, err := h.rdb.Type(ctx, key).Result()
		if err != nil {
			h.t.Fatal(err)
		}
		var v any
		switch typ {
		case "hash":
			v, err = h.rdb.HGetAll(ctx, key).Result()
		case "list":
			v, err = h.rdb.LRange(ctx, key, 0, -1).Result()
		case "zset":
			v, err = h.rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
		case "set":
			var m []string
			m, err = h.rdb.SMembers(ctx, key).Result()
			slices.Sort(m)
			v = m
		default:
			v, err = h.rdb.Get(ctx, key).Result()
		}
		if err != nil {
			h.t.Fatal(err)
		}
		out[key] = fmt.Sprint(v)
	}
	if err := iter.Err(); err != nil {
		h.t.Fatal(err)
	}
	return out
}

func TestReplayingTheSameBatchTwiceChangesNothing(t *testing.T) {
	h := newHarness(t, Config{})
	f := h.fanout(nil)
	ms := scenario(2)
	recs := records(ms...)
	handle(t, f, recs)
	before := h.snapshot()
	handle(t, f, recs)
	after := h.snapshot()
	if !maps.Equal(before, after) {
		for k, v := range after {
			if before[k] != v {
				t.Errorf("%s changed on replay:\n before %s\n after  %s", k, before[k], v)
			}
		}
		t.FailNow()
	}
	h.checkAll(distinctIDs(ms))
	h.checkProduced(distinctIDs(ms))
}

// failingInbox makes inbox script calls fail once they pass the first
// `after` inbox updates, as a worker that dies between sequencing and its
// inbox updates.
type failingInbox struct {
	after int64
	seen  atomic.Int64
}

var errInjected = errors.New("injected: connection lost")

func (f *failingInbox) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *failingInbox) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if f.fails(cmd) {
			cmd.SetErr(errInjected)
			return errInjected
		}
		return next(ctx, cmd)
	}
}

func (f *failingInbox) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var pass []redis.Cmder
		for _, c := range cmds {
			if f.fails(c) {
				c.SetErr(errInjected)
				continue
			}
			pass = append(pass, c)
		}
		if len(pass) == 0 {
			return errInjected
		}
		return next(ctx, pass)
	}
}

func (f *failingInbox) fails(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 4 || (cmd.Name() != "evalsha" && cmd.Name() != "eval") ||
		!strings.HasSuffix(fmt.Sprint(args[3]), ":ib") {
		return false
	}
	// counted in inbox updates: a call holds many
	return f.seen.Add(int64(len(inboxKeysOf(cmd)))) > f.after
}

func TestCrashBetweenSequencingAndInboxIsRepairedOnRestart(t *testing.T) {
	for _, after := range []int64{0, 5, 40} {
		t.Run(fmt.Sprintf("dies after %d inbox updates", after), func(t *testing.T) {
			h := newHarness(t, Config{})
			ms := scenario(3)
			recs := records(ms...)

			// The first worker sequences the batch, then loses Redis
			// part-way through the inbox updates: Handle fails, nothing
			// is committed.
			sick := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t)})
			t.Cleanup(func() { _ = sick.Close() })
			sick.AddHook(&failingInbox{after: after})
			if _, err := h.fanout(sick).Handle(context.Background(), recs); !errors.Is(err, errInjected) {
				t.Fatalf("Handle with a failing Redis: %v, want the injected error", err)
			}
			if seq := h.recount("team").seq; seq == 0 {
				t.Fatal("nothing was sequenced before the failure; the test proves nothing")
			}
			// The restarted worker gets the same records again.
			handle(t, h.fanout(nil), recs)
			h.checkAll(distinctIDs(ms))
			h.checkProduced(distinctIDs(ms))
		})
	}
}

func TestResendsKeepTheirOriginalSeq(t *testing.T) {
	h := newHarness(t, Config{})
	f := h.fanout(nil)
	create := msg("team", "create", "f000", join(users("f", 4)...))
	first := msg("team", "m1", "f001", mentions("f002"))
	second := msg("team", "m2", "f002")
	resend := msg("team", "m1", "f001", mentions("f002"))
	resend.Body = []byte("the client resent it")
	polls := [][]*kgo.Record{
		records(create, first, second, first),              // a resend in the same poll
		records(resend, msg("team", "m3", "f003"), resend), // and in later polls
	}
	for _, p := range polls {
		handle(t, f, p)
	}
	want := map[string]int{"team": 4}
	tr := h.checkInboxes("team")
	if int(tr.seq) != want["team"] {
		t.Fatalf("%d seqs for 4 distinct records", tr.seq)
	}
	got := h.sequencedOnTopic()["team"]
	if len(got) != 4 {
		t.Fatalf("im.sequenced has seqs %v, want 1..4", got)
	}
}

// Inbox writes and their failures are both counted under the hash
// buckets of the user and of the conversation, so a failure rate per
// bucket can be computed and a failing shard stands out.
func TestInboxWriteFailuresAreCountedWithTheirAttemptsByUserAndConversationBucket(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHarness(t, Config{Metrics: reg})
	sick := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t)})
	t.Cleanup(func() { _ = sick.Close() })
	failing := &failingInbox{after: 0}
	sick.AddHook(failing)
	f := h.fanout(sick)
	recs := records(msg("d1", "hi", "a", to("b")))
	if _, err := f.Handle(context.Background(), recs); !errors.Is(err, errInjected) {
		t.Fatalf("Handle with failing inbox writes: %v, want the injected error", err)
	}
	failing.after = 1 << 40 // Redis is well again: the retry succeeds
	handle(t, f, recs)

	count := func(name string) map[[2]string]float64 {
		out := map[[2]string]float64{}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				l := map[string]string{}
				for _, lp := range m.GetLabel() {
					l[lp.GetName()] = lp.GetValue()
				}
				out[[2]string{l["user_bucket"], l["conv_bucket"]}] += m.GetCounter().GetValue()
			}
		}
		return out
	}
	// Both a and b get an inbox update of d1: each failed once, then
	// succeeded.
	conv := failureBucket("d1")
	wantFailures := map[[2]string]float64{}
	wantWrites := map[[2]string]float64{}
	for _, u := range []string{"a", "b"} {
		wantFailures[[2]string{failureBucket(u), conv}]++
		wantWrites[[2]string{failureBucket(u), conv}] += 2
	}
	if got := count("offlinebox_fanout_inbox_write_failures_total"); !maps.Equal(got, wantFailures) {
		t.Errorf("failures by (user, conv) bucket = %v, want %v", got, wantFailures)
	}
	if got := count("offlinebox_fanout_inbox_writes_total"); !maps.Equal(got, wantWrites) {
		t.Errorf("writes by (user, conv) bucket = %v, want %v", got, wantWrites)
	}
}
