package redisstore

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

func newPresenceStore(t *testing.T) *Store {
	rdb, prefix := testenv.Redis(t)
	s, err := New(rdb, Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPresenceNewestConnectionWinsAndAClosedOneCannotUnregisterIt(t *testing.T) {
	s := newPresenceStore(t)
	ctx := context.Background()
	now := time.Now()
	lease := func(node, conn string) PresenceLease {
		return PresenceLease{Node: node, Conn: conn, TTL: time.Minute, Keep: 30 * time.Second}
	}
	if _, had, err := s.SetPresence(ctx, "bob", "phone", lease("a", "c1"), now); err != nil || had {
		t.Fatalf("first registration: had %v, %v", had, err)
	}
	prev, had, err := s.SetPresence(ctx, "bob", "phone", lease("b", "c2"), now)
	if err != nil || !had || prev.Node != "a" || prev.Conn != "c1" || !prev.Online(now) {
		t.Fatalf("the replaced entry is %+v (had %v, %v), want c1 on a, online", prev, had, err)
	}
	// The replaced connection closes after: the newer stays registered.
	if err := s.ClearPresence(ctx, "bob", "phone", "c1", now); err != nil {
		t.Fatal(err)
	}
	got, _ := s.PresenceOf(ctx, []string{"bob"})
	if len(got["bob"]) != 1 || got["bob"][0].Conn != "c2" || !got["bob"][0].Online(now) {
		t.Fatalf("presence %+v, want c2 online", got)
	}
	if err := s.ClearPresence(ctx, "bob", "phone", "c2", now); err != nil {
		t.Fatal(err)
	}
	got, _ = s.PresenceOf(ctx, []string{"bob"})
	if p := got["bob"][0]; p.Online(now) || p.Node != "" || p.Conn != "c2" {
		t.Fatalf("after closing: %+v, want a closed entry of c2 with its time", p)
	}
}

func TestPresenceLeaseLapsesUnlessRefreshedAndStaleEntriesArePruned(t *testing.T) {
	s := newPresenceStore(t)
	ctx := context.Background()
	t0 := time.Now()
	short := PresenceLease{Node: "a", Conn: "c1", TTL: time.Second, Keep: time.Second}
	if _, _, err := s.SetPresence(ctx, "bob", "phone", short, t0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SetPresence(ctx, "bob", "laptop", PresenceLease{Node: "a", Conn: "c2", TTL: time.Second, Keep: time.Second}, t0); err != nil {
		t.Fatal(err)
	}
	replaced, err := s.RefreshPresence(ctx, "a", []LeaseRef{{User: "bob", Device: "laptop", Conn: "c2"}, {User: "bob", Device: "phone", Conn: "other"}},
		time.Minute, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(replaced) != 1 || replaced[0] != "other" {
		t.Fatalf("refresh named %v as replaced, want [other]: the phone's entry names c1", replaced)
	}
	later := t0.Add(2 * time.Second)
	got, _ := s.PresenceOf(ctx, []string{"bob"})
	online := map[string]bool{}
	for _, p := range got["bob"] {
		online[p.Device] = p.Online(later)
	}
	if online["phone"] || !online["laptop"] {
		t.Fatalf("online %v: the refreshed laptop only (the phone's refresh named another connection)", online)
	}
	// A registration long after prunes the lapsed phone.
	if _, _, err := s.SetPresence(ctx, "bob", "tablet", short, t0.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	got, _ = s.PresenceOf(ctx, []string{"bob"})
	for _, p := range got["bob"] {
		if p.Device == "phone" {
			t.Fatalf("the lapsed phone is still there: %+v", got["bob"])
		}
	}
}

// badReplyFor makes the reply of every script call on key one its caller
// cannot read: an array of a number, where connection ids are promised.
type badReplyFor struct{ key string }

func (h badReplyFor) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h badReplyFor) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (h badReplyFor) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			c, ok := cmd.(*redis.Cmd)
			if ok && c.Err() == nil && slices.Contains(cmd.Args(), any(h.key)) {
				c.SetVal([]any{int64(7)})
			}
		}
		return err
	}
}

// One user's bad reply to a lease refresh (malformed, or the server's
// refusal of a key of the wrong type) fails that user alone: the
// connections the other users' replies name as replaced still come back,
// for the node to close, and their leases are extended.
func TestARefreshWithABadReplyForOneUserStillNamesTheOthersReplacedConnections(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(t *testing.T, s *Store)
	}{
		{"a malformed reply", func(t *testing.T, s *Store) {
			s.rdb.AddHook(badReplyFor{key: s.keys.Presence("carol")})
		}},
		{"a key of the wrong type", func(t *testing.T, s *Store) {
			ctx := context.Background()
			key := s.keys.Presence("carol")
			if err := s.rdb.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			if err := s.rdb.Set(ctx, key, "someone's string", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newPresenceStore(t)
			ctx := context.Background()
			t0 := time.Now()
			lease := func(node, conn string) PresenceLease {
				return PresenceLease{Node: node, Conn: conn, TTL: time.Second, Keep: time.Minute}
			}
			// bob's and carol's phones connected again on node b; dan's
			// laptop is still node a's.
			for _, r := range []struct{ user, dev, node, conn string }{
				{"bob", "phone", "b", "bob-new"}, {"carol", "phone", "b", "carol-new"}, {"dan", "laptop", "a", "dan-1"},
			} {
				if _, _, err := s.SetPresence(ctx, r.user, r.dev, lease(r.node, r.conn), t0); err != nil {
					t.Fatal(err)
				}
			}
			tc.spoil(t, s)
			refs := []LeaseRef{{User: "bob", Device: "phone", Conn: "bob-old"},
				{User: "carol", Device: "phone", Conn: "carol-old"}, {User: "dan", Device: "laptop", Conn: "dan-1"}}
			replaced, err := s.RefreshPresence(ctx, "a", refs, time.Minute, t0)
			if !slices.Equal(replaced, []string{"bob-old"}) {
				t.Fatalf("refresh named %v as replaced (err %v), want [bob-old]: carol's failure is hers alone", replaced, err)
			}
			var items ItemErrors
			if !errors.As(err, &items) || len(items) != 1 || items[1] == nil || !Permanent(items[1]) {
				t.Fatalf("refresh error %v, want ItemErrors naming carol's ref (1), for good", err)
			}
			got, err := s.PresenceOf(ctx, []string{"dan"})
			if err != nil || len(got["dan"]) != 1 || !got["dan"][0].Online(t0.Add(30*time.Second)) {
				t.Fatalf("dan's presence %+v (%v), want the lease extended past its first second", got, err)
			}
		})
	}
}

func TestReceiptCursorsOnlyRiseBelongToOneEpochAndLeaveWithTheMember(t *testing.T) {
	s := newPresenceStore(t)
	ctx := context.Background()
	k := s.Keys()
	if err := s.rdb.HSet(ctx, k.ConvMeta("g"), "epoch", 7, "seq", 10).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.HSet(ctx, k.Members("g"), "alice", 0, "bob", 0, "carol", 0).Err(); err != nil {
		t.Fatal(err)
	}
	raise := func(kind byte, member string, seq, epoch uint64) RaisedReceipt {
		t.Helper()
		out, err := s.RaiseReceipts(ctx, kind, []ReceiptMark{{Conv: "g", Epoch: epoch, Member: member, Seq: seq}})
		if err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	count := func(seq uint64) ReceiptCounts {
		t.Helper()
		n, err := s.CountReceipts(ctx, "g", seq, "alice")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if r := raise(ReceiptDelivered, "bob", 5, 7); !r.Raised || r.Prev != 0 {
		t.Fatalf("first raise %+v", r)
	}
	if r := raise(ReceiptDelivered, "bob", 3, 7); r.Raised || r.Prev != 5 {
		t.Fatalf("a lower ack %+v, want no change from 5", r)
	}
	raise(ReceiptRead, "carol", 4, 7) // a read is a delivery too
	raise(ReceiptDelivered, "alice", 9, 7)
	for _, tc := range []struct {
		seq             uint64
		delivered, read int
	}{{3, 2, 1}, {5, 1, 0}, {6, 0, 0}} {
		if n := count(tc.seq); n.Delivered != tc.delivered || n.Read != tc.read || n.Others != 2 {
			t.Errorf("seq %d: %+v, want delivered %d read %d of 2 (the sender alice left out)", tc.seq, n, tc.delivered, tc.read)
		}
	}
	if r := raise(ReceiptDelivered, "bob", 8, 6); r.Raised {
		t.Fatalf("a raise of another epoch changed something: %+v", r)
	}
	if err := s.ForgetReceipts(ctx, "g", []string{"carol"}); err != nil {
		t.Fatal(err)
	}
	if n := count(3); n.Delivered != 1 || n.Read != 0 {
		t.Fatalf("after carol left: %+v", n)
	}
	// The timeline is rebuilt under a new epoch: the old cursors go.
	if err := s.rdb.HSet(ctx, k.ConvMeta("g"), "epoch", 8).Err(); err != nil {
		t.Fatal(err)
	}
	if n := count(1); n.Delivered != 0 {
		t.Fatalf("cursors of the old epoch count in the new: %+v", n)
	}
	if r := raise(ReceiptDelivered, "bob", 2, 8); !r.Raised || r.Prev != 0 {
		t.Fatalf("first raise of the new epoch %+v, want from 0", r)
	}
}
