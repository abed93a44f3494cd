package redisstore

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A move to the hot store marks the main copy first, then copies the keys.
// A read receipt or an ack that reaches the main copy in between (or later,
// through a stale router) must be refused, not applied to a copy that is
// about to be dropped; the caller routes again and retries, and once the
// move is done the same call lands on the hot store.
func TestReadsAndAcksDuringAMoveAreRefusedAndLandAfterIt(t *testing.T) {
	cases := []struct {
		name   string
		call   func(ctx context.Context, st *Store, seq uint64) error
		landed func(ctx context.Context, st *Store, seq uint64) bool
	}{
		{
			name: "read receipt",
			call: func(ctx context.Context, st *Store, seq uint64) error {
				_, err := st.ApplyReads(ctx, []ReadMark{{User: "ann", Conv: "g", Seq: seq}})
				return err
			},
			landed: func(ctx context.Context, st *Store, seq uint64) bool {
				r, _ := st.rdb.HGet(ctx, st.keys.Inbox("ann"), InboxField("g", FieldRead)).Uint64()
				return r == seq && st.rdb.ZCard(ctx, st.keys.Mentions("ann")).Val() == 0
			},
		},
		{
			name: "device ack",
			call: func(ctx context.Context, st *Store, seq uint64) error {
				_, err := st.AckDevice(ctx, "ann", "laptop", []AckItem{{"g", seq, 1}}, 2000)
				return err
			},
			landed: func(ctx context.Context, st *Store, seq uint64) bool {
				c, _ := st.rdb.HGet(ctx, st.keys.Cursor("ann", "laptop"), "g").Uint64()
				return c == seq && st.rdb.ZScore(ctx, st.keys.Devices("ann"), "laptop").Err() == nil
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := readTestStore(t, 100)
			hot := readTestStore(t, 100)
			rs := newReadSeed(t, s)
			rs.group("g", "bob", "ann")
			seq := rs.say("g", group, "bob", "", "@ann", "ann")
			ctx := context.Background()
			if _, err := s.AckDevice(ctx, "ann", "phone", []AckItem{{"g", 1, 1}}, 1000); err != nil {
				t.Fatal(err)
			}
			before := userSnapshot(t, s, "ann")
			// The first step of a move: the main copy is marked.
			s.rdb.HSet(ctx, s.keys.Profile("ann"), "loc", "hot")
			if err := tc.call(ctx, s, seq); !errors.Is(err, ErrUserMoved) {
				t.Fatalf("during the move: %v, want ErrUserMoved", err)
			}
			if after := userSnapshot(t, s, "ann"); !maps.Equal(before, after) {
				t.Fatalf("the refused call changed the main copy:\n%v\nthen\n%v", before, after)
			}
			// The move resumes and completes; the retry goes where the
			// router now says.
			router := NewInboxRouter(s, hot, 0)
			if err := router.MoveToHot(ctx, "ann"); err != nil {
				t.Fatal(err)
			}
			if err := tc.call(ctx, router.storeOf("ann"), seq); err != nil {
				t.Fatalf("retry after the move: %v", err)
			}
			if !tc.landed(ctx, hot, seq) {
				t.Fatal("the retried call did not land on the hot store")
			}
		})
	}
}

// userSnapshot dumps every key of user's that reads and acks touch.
func userSnapshot(t *testing.T, s *Store, user string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, k := range []string{s.keys.Inbox(user), s.keys.Mentions(user), s.keys.Devices(user), s.keys.Evicted(user),
		s.keys.Cursor(user, "phone"), s.keys.Cursor(user, "laptop")} {
		v, err := s.rdb.Dump(ctx, k).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		out[k] = v
	}
	return out
}
