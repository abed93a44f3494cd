package fanout

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
)

// countedClient is a client of the test server whose script calls are
// counted.
func countedClient(t *testing.T, calls *redisCalls) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t), PoolSize: 32})
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(calls)
	return rdb
}

func TestTwentyMessagesToFiveHundredMembersTakeOneSequencingCallAndOneInboxUpdatePerMember(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHarness(t, Config{Metrics: reg})
	calls := newRedisCalls()
	f := h.fanout(countedClient(t, calls))
	members := users("m", 500)
	// The group exists before the poll; this also loads the scripts, so
	// the counted poll has no first-use retries.
	handle(t, f, records(msg("big", "create", members[0], join(members...))))
	calls.reset()

	var poll []*schemas.Message
	for i := range 20 {
		poll = append(poll, msg("big", fmt.Sprintf("m%d", i), members[i*7], mentions(members[i*11+1])))
	}
	handle(t, f, records(poll...))

	if calls.sequence != 1 {
		t.Errorf("%d sequencing calls for 20 messages of one conversation, want 1", calls.sequence)
	}
	if len(calls.inbox) != len(members) {
		t.Errorf("inbox updates reached %d users, want all %d members", len(calls.inbox), len(members))
	}
	for key, n := range calls.inbox {
		if n != 1 {
			t.Errorf("%s: %d inbox updates, want 1 for the 20 messages", key, n)
		}
	}
	// Many members a script call: one per chunk of RecipientChunk.
	if want := len(members) / DefaultRecipientChunk; calls.inboxCalls != want {
		t.Errorf("%d inbox script calls for %d members, want %d", calls.inboxCalls, len(members), want)
	}
	h.checkInboxes("big")
	// The merge sizes are reported: this poll's one sequencing call
	// merged 20 records, and every recipient's update too.
	wantSeq := 1 + 20.0 // the founding poll's call, then this one
	if got := histogramSum(t, reg, "offlinebox_fanout_merge_size", "sequence"); got != wantSeq {
		t.Errorf("merge_size{stage=sequence} sums to %v, want %v", got, wantSeq)
	}
	if got := histogramSum(t, reg, "offlinebox_fanout_merge_size", "inbox"); got != 500+500*20 {
		t.Errorf("merge_size{stage=inbox} sums to %v, want %v", got, 500+500*20)
	}
}

func TestAtMostFiveTasksOfOneConversationRunAtOnce(t *testing.T) {
	h := newHarness(t, Config{RecipientChunk: 10, Workers: 32})
	calls := newRedisCalls()
	f := h.fanout(countedClient(t, calls))
	members := users("m", 400)
	handle(t, f, records(msg("big", "create", members[0], join(members...))))
	calls.reset()
	// Each pipeline waits a little inside the hook so that the chunk
	// tasks overlap and the bound, not luck, decides how many run.
	calls.hold = 5 * time.Millisecond
	handle(t, f, records(msg("big", "m1", members[1])))
	if calls.maxInflight > DefaultTasksPerConversation {
		t.Fatalf("%d chunk tasks of one conversation ran at once, want at most %d", calls.maxInflight, DefaultTasksPerConversation)
	}
	if calls.maxInflight < 2 {
		t.Fatalf("chunk tasks never overlapped (%d at most): the bound was not exercised", calls.maxInflight)
	}
	h.checkInboxes("big")
}

func histogramSum(t *testing.T, reg *prometheus.Registry, name, stage string) float64 {
	t.Helper()
	m := seriesWith(t, reg, name, "stage", stage)
	if m == nil {
		t.Fatalf("no %s{stage=%s}", name, stage)
	}
	return m.GetHistogram().GetSampleSum()
}
