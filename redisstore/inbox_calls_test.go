package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

// scriptCalls counts script calls (EVALSHA/EVAL), shown them by a commandHook.
type scriptCalls struct{ n atomic.Int64 }

func (h *scriptCalls) count(cmd redis.Cmder) {
	if name := strings.ToLower(cmd.Name()); name == "evalsha" || name == "eval" {
		h.n.Add(1)
	}
}

// inboxDump is everything a user's inbox keys hold, prefix aside.
func inboxDump(t *testing.T, s *Store, user string) string {
	t.Helper()
	ctx := context.Background()
	k := s.keys
	ib, err := s.rdb.HGetAll(ctx, k.Inbox(user)).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := fmt.Sprint(ib)
	for _, key := range []string{k.ConvList(user), k.Mentions(user), k.MentionIndex(user)} {
		z, err := s.rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		out += fmt.Sprint(z)
	}
	return out
}

// inboxWorkload is updates of 250 users over three conversations, with
// mentions, own messages, joins, a conversion, a newer epoch and replays.
func inboxWorkload() [][]InboxUpdate {
	var first, second []InboxUpdate
	for i := range 250 {
		u := fmt.Sprintf("u%d", i)
		first = append(first,
			InboxUpdate{User: u, Conv: "g", Form: InboxGroup, Epoch: 1,
				Events: []InboxEvent{ev(InboxDelivered, 1), ev(InboxMentioned, 2), ev(InboxDelivered, 3)}},
			InboxUpdate{User: u, Conv: "d", Form: InboxDirect, Epoch: 1, Events: []InboxEvent{ev(InboxOwn, 4)}})
		if i%3 == 0 {
			first = append(first, InboxUpdate{User: u, Conv: "big", Form: InboxLarge, Epoch: 1,
				Events: []InboxEvent{ev(InboxConvertLarge, 0), ev(InboxJoined, 5), ev(InboxMentioned, 7)}})
		}
		second = append(second,
			// a replay of the first batch, then the timeline's next epoch
			InboxUpdate{User: u, Conv: "g", Form: InboxGroup, Epoch: 1,
				Events: []InboxEvent{ev(InboxDelivered, 1), ev(InboxMentioned, 2), ev(InboxDelivered, 3)}},
			InboxUpdate{User: u, Conv: "g", Form: InboxGroup, Epoch: 2,
				Events: []InboxEvent{ev(InboxDelivered, 3), ev(InboxOwn, 4)}})
	}
	return [][]InboxUpdate{first, second}
}

// Many users in one script call write what one call per update writes,
// with a call per InboxesPerCall updates on a standalone server.
func TestApplyInboxesManyUsersPerCallWriteWhatACallPerUpdateWrites(t *testing.T) {
	ctx := context.Background()
	stores := map[int]*Store{}
	calls := map[int]*scriptCalls{}
	for _, per := range []int{1, 100} {
		rdb, prefix := testenv.Redis(t)
		// loaded first, so that no call is sent again after NOSCRIPT
		if err := applyInboxesScript.Load(ctx, rdb).Err(); err != nil {
			t.Fatal(err)
		}
		calls[per] = &scriptCalls{}
		rdb.AddHook(commandHook(calls[per].count))
		s, err := New(rdb, Config{Prefix: prefix, InboxesPerCall: per})
		if err != nil {
			t.Fatal(err)
		}
		stores[per] = s
	}
	outcomes := map[int]string{}
	for _, batch := range inboxWorkload() {
		for per, s := range stores {
			before := calls[per].n.Load()
			outs, errs := s.ApplyInboxes(ctx, batch)
			for i, err := range errs {
				if err != nil {
					t.Fatalf("%d per call, update %d: %v", per, i, err)
				}
			}
			outcomes[per] += fmt.Sprint(outs)
			if got, want := calls[per].n.Load()-before, int64((len(batch)+per-1)/per); got != want {
				t.Fatalf("%d per call: %d script calls for %d updates, want %d", per, got, len(batch), want)
			}
		}
	}
	if outcomes[1] != outcomes[100] {
		t.Fatalf("outcomes differ:\none per call   %s\n100 per call %s", outcomes[1], outcomes[100])
	}
	for i := range 250 {
		u := fmt.Sprintf("u%d", i)
		if one, many := inboxDump(t, stores[1], u), inboxDump(t, stores[100], u); one != many {
			t.Fatalf("%s's inbox differs:\none per call   %s\n100 per call %s", u, one, many)
		}
	}
	if d := inboxDump(t, stores[100], "u3"); !strings.Contains(d, "g:e:2") || !strings.Contains(d, "big:t:L") {
		t.Fatalf("u3's inbox did not take the new epoch or the large form: %s", d)
	}
}

// usersInOneSlot returns n user ids whose keys share one cluster slot.
func usersInOneSlot(s *Store, n int) []string {
	slot := keyHashSlot(s.keys.Inbox("s0"))
	out := []string{"s0"}
	for i := 1; len(out) < n; i++ {
		if u := fmt.Sprintf("s%d", i); keyHashSlot(s.keys.Inbox(u)) == slot {
			out = append(out, u)
		}
	}
	return out
}

// On a Redis Cluster a script call holds the users of one slot: users
// who share a slot go in one call, the others in one call per slot.
func TestApplyInboxesGroupsUsersBySlotOnACluster(t *testing.T) {
	ctx := context.Background()
	crdb, prefix := testenv.RedisCluster(t)
	if err := applyInboxesScript.Load(ctx, crdb).Err(); err != nil { // on every master
		t.Fatal(err)
	}
	calls := &scriptCalls{}
	crdb.AddHook(commandHook(calls.count))
	s, err := New(crdb, Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	users := usersInOneSlot(s, 3)
	slots := map[int]bool{keyHashSlot(s.keys.Inbox(users[0])): true}
	for i := 0; len(slots) < 4; i++ {
		u := fmt.Sprintf("o%d", i)
		if sl := keyHashSlot(s.keys.Inbox(u)); !slots[sl] {
			slots[sl] = true
			users = append(users, u)
		}
	}
	var ups []InboxUpdate
	for _, u := range users {
		ups = append(ups, InboxUpdate{User: u, Conv: "c", Form: InboxGroup, Events: []InboxEvent{ev(InboxDelivered, 1), ev(InboxMentioned, 2)}})
	}
	for _, want := range []InboxOutcome{InboxApplied, InboxReplayed} {
		before := calls.n.Load()
		outs, errs := s.ApplyInboxes(ctx, ups)
		for i := range ups {
			if errs[i] != nil || outs[i] != want {
				t.Fatalf("%s: %v, %v; want %v", ups[i].User, outs[i], errs[i], want)
			}
		}
		if got := calls.n.Load() - before; got != int64(len(slots)) {
			t.Fatalf("%d script calls for %d users in %d slots", got, len(users), len(slots))
		}
	}
	for _, u := range users {
		if got := readInbox(t, s, u); got.unread("c") != 2 || len(got.lane) != 1 {
			t.Fatalf("%s's inbox on the cluster: %+v", u, got)
		}
	}
}

// A merge batch writes what its events write one update at a time: the
// runs of deliveries it sends as their last one included.
func TestApplyInboxesBatchWritesWhatItsEventsWriteOneByOne(t *testing.T) {
	ctx := context.Background()
	batched, single := seqTestStore(t, 0), seqTestStore(t, 0)
	rnd := rand.New(rand.NewPCG(7, 13))
	kinds := []InboxEventKind{InboxDelivered, InboxDelivered, InboxDelivered, InboxMentioned, InboxOwn}
	for i := range 40 {
		u := fmt.Sprintf("u%d", i)
		seq := uint64(0)
		for epoch := uint64(1); epoch <= 2; epoch++ {
			if epoch == 2 && seq > 3 {
				seq -= 3 // a rebuilt timeline goes on below the old counter
			}
			for range 3 {
				var evs []InboxEvent
				for range 1 + rnd.IntN(12) {
					seq++
					evs = append(evs, ev(kinds[rnd.IntN(len(kinds))], seq))
				}
				up := InboxUpdate{User: u, Conv: "c", Form: InboxGroup, Epoch: epoch, Events: evs}
				if _, errs := batched.ApplyInboxes(ctx, []InboxUpdate{up}); errs[0] != nil {
					t.Fatal(errs[0])
				}
				for _, e := range evs {
					one := up
					one.Events = []InboxEvent{e}
					if _, errs := single.ApplyInboxes(ctx, []InboxUpdate{one}); errs[0] != nil {
						t.Fatal(errs[0])
					}
				}
			}
		}
		if b, s := inboxDump(t, batched, u), inboxDump(t, single, u); b != s {
			t.Fatalf("%s: batched\n%s\none by one\n%s", u, b, s)
		}
	}
}

func TestSentEventsKeepTheLastOfEveryRunOfDeliveries(t *testing.T) {
	d, m, o, c := InboxDelivered, InboxMentioned, InboxOwn, InboxConvertLarge
	at := func(k InboxEventKind, s uint64) InboxEvent { return InboxEvent{Kind: k, Seq: s} }
	cases := []struct{ in, want []InboxEvent }{
		{[]InboxEvent{at(d, 1), at(d, 2), at(d, 3), at(d, 4)}, []InboxEvent{at(d, 1), at(d, 4)}},
		{[]InboxEvent{at(d, 1), at(d, 2), at(m, 3), at(d, 4), at(d, 5), at(o, 6)},
			[]InboxEvent{at(d, 1), at(d, 2), at(m, 3), at(d, 5), at(o, 6)}},
		{[]InboxEvent{at(c, 0), at(d, 1), at(d, 2), at(d, 3)}, []InboxEvent{at(c, 0), at(d, 1), at(d, 3)}},
		{[]InboxEvent{at(d, 7)}, []InboxEvent{at(d, 7)}},
	}
	for _, tc := range cases {
		if got := sentEvents(tc.in); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%v: sent %v, want %v", tc.in, got, tc.want)
		}
	}
}

// The updates of a call that write the same (conversation, form, epoch,
// events as sent) carry it once: a batch to a group sends its deliveries
// once, not once per recipient.
func TestInboxCallSendsEachDistinctPlanOnce(t *testing.T) {
	s := seqTestStore(t, 0)
	deliveries := make([]InboxEvent, 20)
	for i := range deliveries {
		deliveries[i] = ev(InboxDelivered, uint64(i+1))
	}
	withOwn := slices.Clone(deliveries)
	withOwn[4] = ev(InboxOwn, 5)
	withMention := slices.Clone(deliveries)
	withMention[9] = ev(InboxMentioned, 10)
	var ups []InboxUpdate
	for i := range 96 {
		ups = append(ups, InboxUpdate{User: fmt.Sprintf("u%d", i), Conv: "g", Form: InboxGroup, Epoch: 1, Events: deliveries})
	}
	ups = append(ups,
		InboxUpdate{User: "sender", Conv: "g", Form: InboxGroup, Epoch: 1, Events: withOwn},
		InboxUpdate{User: "named", Conv: "g", Form: InboxGroup, Epoch: 1, Events: withMention},
		InboxUpdate{User: "u1", Conv: "h", Form: InboxGroup, Epoch: 1, Events: deliveries}, // another conversation
		InboxUpdate{User: "u2", Conv: "g", Form: InboxGroup, Epoch: 2, Events: deliveries}) // another epoch
	idx := make([]int, len(ups))
	for i := range idx {
		idx[i] = i
	}
	c := s.inboxCall(ups, idx, "")
	if got := c.args[0]; got != 5 {
		t.Fatalf("%v plans, want 5 (deliveries, own, mention, other conversation, other epoch)", got)
	}
	// each plan: 4 fields and its sent events (3 fields each); then a plan
	// number per update and the fence
	sent := func(evs []InboxEvent) int { return 4 + 3*len(sentEvents(evs)) }
	want := 1 + 3*sent(deliveries) + sent(withOwn) + sent(withMention) + len(ups) + 1
	if len(c.args) != want {
		t.Fatalf("%d arguments, want %d", len(c.args), want)
	}
	refs := c.args[len(c.args)-1-len(ups) : len(c.args)-1]
	if refs[0] != 1 || refs[95] != 1 || refs[96] != 2 || refs[97] != 3 || refs[98] != 4 || refs[99] != 5 {
		t.Fatalf("plan numbers %v", refs)
	}
	outs, errs := s.ApplyInboxes(context.Background(), ups)
	for i := range ups {
		if errs[i] != nil || outs[i] != InboxApplied {
			t.Fatalf("update %d: %v, %v", i, outs[i], errs[i])
		}
	}
	if got := readInbox(t, s, "sender"); got.unread("g") != 15 || got.fields["g:r"] != "5" {
		t.Fatalf("sender's inbox: %+v", got.fields)
	}
}
