package fanout

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/schemas"
)

// scenarioConvs are the conversations of scenario.
var scenarioConvs = []string{"team", "dm-ab", "dm-ac"}

// scenario is a deterministic stream: a group founded by 12 users that
// gets messages (some mentioning, some @all), joins, leaves and client
// resends, interleaved with two direct conversations.
func scenario(seed uint64) []*schemas.Message {
	rng := rand.New(rand.NewPCG(seed, 7))
	founders := users("f", 12)
	var out []*schemas.Message
	out = append(out, msg("team", "team-create", founders[0], join(founders...)))
	members := slices.Clone(founders)
	joiners := users("n", 10)
	for i := range 120 {
		switch r := rng.IntN(20); {
		case r == 0 && len(joiners) > 0:
			u := joiners[0]
			joiners = joiners[1:]
			members = append(members, u)
			out = append(out, msg("team", fmt.Sprintf("team-join-%d", i), members[0], join(u)))
		case r == 1 && len(members) > 4:
			k := 1 + rng.IntN(len(members)-1)
			u := members[k]
			members = slices.Delete(members, k, k+1)
			out = append(out, msg("team", fmt.Sprintf("team-leave-%d", i), u, leave(u)))
		case r == 2 && len(out) > 3:
			// A client resend: same client_msg_id as an earlier record.
			out = append(out, out[rng.IntN(len(out))])
		case r < 12:
			from := members[rng.IntN(len(members))]
			var opts []func(*schemas.Message)
			if rng.IntN(4) == 0 {
				opts = append(opts, mentions(members[rng.IntN(len(members))], members[rng.IntN(len(members))]))
			}
			if rng.IntN(15) == 0 {
				opts = append(opts, mentionAll)
			}
			out = append(out, msg("team", fmt.Sprintf("team-%d", i), from, opts...))
		case r < 17:
			pair := [2]string{"a", "b"}
			if rng.IntN(2) == 0 {
				pair = [2]string{"b", "a"}
			}
			out = append(out, msg("dm-ab", fmt.Sprintf("ab-%d", i), pair[0], to(pair[1])))
		default:
			out = append(out, msg("dm-ac", fmt.Sprintf("ac-%d", i), "c", to("a"), mentions("a")))
		}
	}
	return out
}

// distinctIDs counts the distinct client_msg_ids per conversation.
func distinctIDs(ms []*schemas.Message) map[string]int {
	seen := map[string]bool{}
	out := map[string]int{}
	for _, m := range ms {
		if k := m.GetConvId() + "/" + m.GetClientMsgId(); !seen[k] {
			seen[k] = true
			out[m.GetConvId()]++
		}
	}
	return out
}

// checkAll checks every scenario conversation and that each has one seq
// per distinct client_msg_id.
func (h *harness) checkAll(want map[string]int) {
	h.t.Helper()
	for _, conv := range scenarioConvs {
		tr := h.checkInboxes(conv)
		if int(tr.seq) != want[conv] {
			h.t.Errorf("%s: %d seqs, want one per distinct client_msg_id (%d)", conv, tr.seq, want[conv])
		}
	}
}

// sequencedOnTopic reads im.sequenced to its end and returns the seqs seen
// per conversation.
func (h *harness) sequencedOnTopic() map[string]map[uint64]bool {
	h.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.addrs...), kgo.ConsumeTopics(schemas.TopicSequenced),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		h.t.Fatal(err)
	}
	defer cl.Close()
	out := map[string]map[uint64]bool{}
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
			conv := sq.GetMessage().GetConvId()
			if string(r.Key) != conv {
				h.t.Fatalf("sequenced record keyed %q for conversation %q", r.Key, conv)
			}
			if out[conv] == nil {
				out[conv] = map[uint64]bool{}
			}
			out[conv][sq.GetSeq()] = true
		})
	}
	return out
}

// checkProduced checks every seq of every conversation of want reached
// im.sequenced.
func (h *harness) checkProduced(want map[string]int) {
	h.t.Helper()
	got := h.sequencedOnTopic()
	for conv, n := range want {
		for s := 1; s <= n; s++ {
			if !got[conv][uint64(s)] {
				h.t.Fatalf("%s seq %d never reached im.sequenced", conv, s)
			}
		}
	}
}

// inPolls cuts records into polls of n.
func inPolls(recs []*kgo.Record, n int) [][]*kgo.Record {
	var out [][]*kgo.Record
	for len(recs) > n {
		out = append(out, recs[:n])
		recs = recs[n:]
	}
	return append(out, recs)
}

func TestScenarioKeepsEveryInvariantAcrossPollSizes(t *testing.T) {
	for _, poll := range []int{1, 7, 500} {
		t.Run(fmt.Sprintf("poll of %d", poll), func(t *testing.T) {
			h := newHarness(t, Config{})
			f := h.fanout(nil)
			ms := scenario(1)
			for _, p := range inPolls(records(ms...), poll) {
				if dead := handle(t, f, p); len(dead) != 0 {
					t.Fatalf("dead letters: %v", dead[0].Reason)
				}
			}
			h.checkAll(distinctIDs(ms))
			h.checkProduced(distinctIDs(ms))
		})
	}
}
