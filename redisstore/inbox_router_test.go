package redisstore

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

func TestMoveToHotCarriesEveryUserKeyAndSendsWritersThere(t *testing.T) {
	ctx := context.Background()
	main, hot := mainAndHot(t)
	rdb := main.rdb
	upd := func(seq uint64) []InboxUpdate {
		return []InboxUpdate{{User: "star", Conv: "c", Form: InboxGroup, Events: []InboxEvent{ev(InboxMentioned, seq)}}}
	}
	if _, errs := main.ApplyInboxes(ctx, upd(1)); errs[0] != nil {
		t.Fatal(errs[0])
	}
	k := main.Keys()
	rdb.ZAdd(ctx, k.Devices("star"), redis.Z{Score: 5, Member: "phone"})
	rdb.HSet(ctx, k.Cursor("star", "phone"), "c", 1)

	router := NewInboxRouter(main, hot, 0)
	if err := router.MoveToHot(ctx, "star"); err != nil {
		t.Fatal(err)
	}
	if !router.OnHot("star") || router.OnHot("other") {
		t.Fatal("router does not send the moved user to the hot store")
	}
	for _, key := range []string{k.Inbox("star"), k.Mentions("star"), k.Devices("star"), k.Cursor("star", "phone")} {
		if n, _ := rdb.Exists(ctx, key).Result(); n != 0 {
			t.Fatalf("%s is still on the main store", key)
		}
	}
	if got, _ := rdb.HGet(ctx, hot.Keys().Cursor("star", "phone"), "c").Result(); got != "1" {
		t.Fatalf("cursor on the hot store = %q, want 1", got)
	}
	// A writer with a stale route is refused by the main store.
	if _, errs := main.ApplyInboxes(ctx, upd(2)); !errors.Is(errs[0], ErrUserMoved) {
		t.Fatalf("stale write on main: %v, want ErrUserMoved", errs[0])
	}
	// Another process finds the user after refreshing its copy.
	other := NewInboxRouter(main, hot, 0)
	if err := other.Refresh(ctx, true); err != nil {
		t.Fatal(err)
	}
	outs, errs := other.ApplyInboxes(ctx, upd(2))
	if errs[0] != nil || outs[0] != InboxApplied {
		t.Fatalf("write on hot: %v, %v", outs[0], errs[0])
	}
	got := readInbox(t, hot, "star")
	if got.unread("c") != 2 || len(got.lane) != 2 {
		t.Fatalf("hot inbox %+v, want both deliveries and mentions", got)
	}
}

func TestRouterApplyInboxesRoutesAgainWhenTheUserMovedUnderIt(t *testing.T) {
	cases := []struct {
		name string
		// move moves star, or starts to, without the router under test
		// knowing.
		move    func(ctx context.Context, t *testing.T, main, hot *Store)
		withHot bool
		// wantHot: the write lands on the hot store; else it fails with
		// ErrUserMoved and changes nothing.
		wantHot bool
	}{
		{"another process moved the user", func(ctx context.Context, t *testing.T, main, hot *Store) {
			if err := NewInboxRouter(main, hot, 0).MoveToHot(ctx, "star"); err != nil {
				t.Fatal(err)
			}
		}, true, true},
		{"a move stopped half-way is finished", func(ctx context.Context, t *testing.T, main, _ *Store) {
			main.rdb.HSet(ctx, main.keys.Profile("star"), "loc", "hot")
		}, true, true},
		{"marked moved without a hot store", func(ctx context.Context, t *testing.T, main, _ *Store) {
			main.rdb.HSet(ctx, main.keys.Profile("star"), "loc", "hot")
		}, false, false},
	}
	upd := func(seq uint64) []InboxUpdate {
		return []InboxUpdate{
			{User: "star", Conv: "c", Form: InboxGroup, Events: []InboxEvent{ev(InboxDelivered, seq)}},
			{User: "fan", Conv: "c", Form: InboxGroup, Events: []InboxEvent{ev(InboxDelivered, seq)}},
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			main, hot := mainAndHot(t)
			var router *InboxRouter
			if tc.withHot {
				router = NewInboxRouter(main, hot, 0)
			} else {
				router = NewInboxRouter(main, nil, 0)
			}
			if _, errs := router.ApplyInboxes(ctx, upd(1)); errors.Join(errs...) != nil {
				t.Fatal(errs)
			}
			tc.move(ctx, t, main, hot)

			outs, errs := router.ApplyInboxes(ctx, upd(2))
			if errs[1] != nil || outs[1] != InboxApplied || readInbox(t, main, "fan").fields["c:l"] != "2" {
				t.Fatalf("fan, who stayed: %v, %v", outs[1], errs[1])
			}
			if !tc.wantHot {
				if !errors.Is(errs[0], ErrUserMoved) {
					t.Fatalf("star: %v, want ErrUserMoved", errs[0])
				}
				if got := readInbox(t, main, "star").fields["c:l"]; got != "1" {
					t.Fatalf("star's last seq on main %q after a refused write, want 1", got)
				}
				return
			}
			if errs[0] != nil || outs[0] != InboxApplied || !router.OnHot("star") {
				t.Fatalf("star: %v, %v, on hot %v", outs[0], errs[0], router.OnHot("star"))
			}
			if got := readInbox(t, hot, "star").fields["c:l"]; got != "2" {
				t.Fatalf("star's last seq on the hot store %q, want 2", got)
			}
		})
	}
}

// mainAndHot are a main and a hot store. The hot store is another key
// space of the same server here; in a deployment it is another server.
func mainAndHot(t *testing.T) (main, hot *Store) {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	main, err := New(rdb, Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if hot, err = New(rdb, Config{Prefix: prefix + "hot:"}); err != nil {
		t.Fatal(err)
	}
	return main, hot
}
