package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

// failureStore is a store over its own client whose script calls are
// counted, with run called on each command before it is sent.
func failureStore(t *testing.T, cfg Config, run func(redis.Cmder)) (*Store, *scriptCalls) {
	t.Helper()
	// no retries of its own: what a call answers is what the store sees
	rdb := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t), MaxRetries: -1, ReadTimeout: 300 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	prefix := testenv.UniquePrefix(t)
	// loaded first, so that no call is sent again after NOSCRIPT
	if err := applyInboxesScript.Load(context.Background(), rdb).Err(); err != nil {
		t.Fatal(err)
	}
	calls := &scriptCalls{}
	rdb.AddHook(commandHook(func(cmd redis.Cmder) {
		calls.count(cmd)
		if run != nil {
			run(cmd)
		}
	}))
	cfg.Prefix = prefix
	s, err := New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, calls
}

// mentionOf is an update mentioning user at seq 1 of conversation c, so
// that it touches every key of the user's.
func mentionOf(user string) InboxUpdate {
	return InboxUpdate{User: user, Conv: "c", Form: InboxGroup, Epoch: 1, Events: []InboxEvent{ev(InboxMentioned, 1)}}
}

// Whichever of a user's keys holds the wrong type, that user's update
// fails for good with the server's WRONGTYPE, in the same single call
// the others are applied by; once the key is repaired, the update's replay
// writes everything it would have.
func TestAKeyOfTheWrongTypeFailsOnlyItsUsersUpdateForGood(t *testing.T) {
	cases := []struct {
		name string
		key  func(k Keys, user string) string
	}{
		{"inbox", Keys.Inbox},
		{"conversation list", Keys.ConvList},
		{"mention lane", Keys.Mentions},
		{"mention index", Keys.MentionIndex},
		{"profile", Keys.Profile},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, calls := failureStore(t, Config{}, nil)
			ctx := context.Background()
			bad := tc.key(s.keys, "bad")
			if err := s.rdb.Set(ctx, bad, "someone's string", 0).Err(); err != nil {
				t.Fatal(err)
			}
			outs, errs := s.ApplyInboxes(ctx, []InboxUpdate{mentionOf("a"), mentionOf("bad"), mentionOf("z")})
			if n := calls.n.Load(); n != 1 {
				t.Fatalf("%d script calls, want 1: the failure was isolated inside the call", n)
			}
			for _, i := range []int{0, 2} {
				if outs[i] != InboxApplied || errs[i] != nil {
					t.Fatalf("update %d next to the bad one: %v, %v; want applied", i, outs[i], errs[i])
				}
				u := []string{"a", "bad", "z"}[i]
				if got := readInbox(t, s, u); got.fields["c:l"] != "1" || len(got.lane) != 1 || got.listed != 1001 {
					t.Fatalf("%s's inbox after the call: %+v", u, got)
				}
			}
			err := errs[1]
			if !Permanent(err) || !strings.Contains(err.Error(), "WRONGTYPE") || !strings.Contains(err.Error(), "bad") {
				t.Fatalf("the bad user's error: %v (permanent %v), want a permanent WRONGTYPE naming the user", err, Permanent(err))
			}
			if v, err := s.rdb.Get(ctx, bad).Result(); err != nil || v != "someone's string" {
				t.Fatalf("the bad key now holds %q (%v)", v, err)
			}
			// The update failed before its guards moved: repaired, its
			// replay writes what its neighbours got.
			if err := s.rdb.Del(ctx, bad).Err(); err != nil {
				t.Fatal(err)
			}
			outs, errs = s.ApplyInboxes(ctx, []InboxUpdate{mentionOf("bad")})
			if outs[0] != InboxApplied || errs[0] != nil {
				t.Fatalf("the replay once the key is repaired: %v, %v; want applied", outs[0], errs[0])
			}
			if got, want := inboxDump(t, s, "bad"), inboxDump(t, s, "a"); got != want {
				t.Fatalf("the repaired user's keys after the replay:\n%s\nthe neighbour's:\n%s", got, want)
			}
		})
	}
}

// A call that fails whole for good (here: its plan count mangled on the
// way, so the script fails before any update) is sent again once, one
// update a call: each update then gets its own answer.
func TestACallThatFailsWholeForGoodIsSentAgainOnceOneUpdateACall(t *testing.T) {
	mangle := func(cmd redis.Cmder) {
		args := cmd.Args()
		if name := strings.ToLower(cmd.Name()); name != "evalsha" && name != "eval" {
			return
		}
		n, _ := strconv.Atoi(fmt.Sprint(args[2]))
		if n > 5 { // more than one update
			args[3+n] = "not a number"
		}
	}
	s, calls := failureStore(t, Config{}, func(cmd redis.Cmder) { mangle(cmd) })
	ctx := context.Background()
	if err := s.rdb.Set(ctx, s.keys.Inbox("bad"), "someone's string", 0).Err(); err != nil {
		t.Fatal(err)
	}
	outs, errs := s.ApplyInboxes(ctx, []InboxUpdate{mentionOf("a"), mentionOf("bad"), mentionOf("z")})
	if n := calls.n.Load(); n != 4 {
		t.Fatalf("%d script calls, want 4: the call, then one per update", n)
	}
	if outs[0] != InboxApplied || errs[0] != nil || outs[2] != InboxApplied || errs[2] != nil {
		t.Fatalf("good updates: %v %v, %v %v; want applied", outs[0], errs[0], outs[2], errs[2])
	}
	if !Permanent(errs[1]) || !strings.Contains(errs[1].Error(), "WRONGTYPE") {
		t.Fatalf("the bad update: %v, want its own WRONGTYPE", errs[1])
	}
}

// A call that fails whole for good every time is given up after the one
// round of calls per update: nothing is sent a third time.
func TestACallThatAlwaysFailsForGoodIsNotRetriedWithoutEnd(t *testing.T) {
	s, calls := failureStore(t, Config{}, func(cmd redis.Cmder) {
		if name := strings.ToLower(cmd.Name()); name == "evalsha" || name == "eval" {
			args := cmd.Args()
			n, _ := strconv.Atoi(fmt.Sprint(args[2]))
			args[3+n] = "not a number"
		}
	})
	outs, errs := s.ApplyInboxes(context.Background(), []InboxUpdate{mentionOf("a"), mentionOf("z")})
	if n := calls.n.Load(); n != 3 {
		t.Fatalf("%d script calls, want 3", n)
	}
	for i, err := range errs {
		if !Permanent(err) || outs[i] != InboxReplayed {
			t.Fatalf("update %d: %v, %v; want a permanent error", i, outs[i], err)
		}
	}
}

// A server that does not answer in time (its read timeout) is a store to wait for: every
// update of the call fails with a temporary error, and the call is not
// sent again one update at a time.
func TestAPausedServerFailsTheCallTemporarilyAndIsNotRetriedHere(t *testing.T) {
	s, calls := failureStore(t, Config{}, nil)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t)})
	t.Cleanup(func() { _ = admin.Close() })
	if err := admin.Do(ctx, "CLIENT", "PAUSE", 1000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Do(ctx, "CLIENT", "UNPAUSE") })
	_, errs := s.ApplyInboxes(ctx, []InboxUpdate{mentionOf("a"), mentionOf("z")})
	admin.Do(ctx, "CLIENT", "UNPAUSE")
	for i, err := range errs {
		if err == nil || Permanent(err) {
			t.Fatalf("update %d while the server was paused: %v, want a temporary error", i, err)
		}
	}
	if n := calls.n.Load(); n != 1 {
		t.Fatalf("%d script calls, want 1", n)
	}
}

// The hot users' set is read by every routed call: holding the wrong type,
// it stops every user alike, so it is a store to wait for, not a reason
// to give up on each user's update.
func TestABrokenHotUsersSetIsWaitedForNotChargedToEveryUser(t *testing.T) {
	ctx := context.Background()
	main, hot := mainAndHot(t)
	if err := main.rdb.Set(ctx, main.Keys().HotUsers(), "someone's string", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, errs := NewInboxRouter(main, hot, 0).ApplyInboxes(ctx, []InboxUpdate{mentionOf("a"), mentionOf("z")})
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") || Permanent(err) {
			t.Fatalf("update %d with the hot users' set broken: %v (permanent %v), want a temporary WRONGTYPE",
				i, err, Permanent(err))
		}
	}
}
