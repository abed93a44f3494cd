package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/schemas"
)

func TestCensusCountsIdleUsersAndDevicesThatDriftedApart(t *testing.T) {
	s := readTestStore(t, 100)
	hot := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	users := []string{"ann", "bob", "cid", "dan", "eve", "fay"}
	rs.group("g", users...)
	rs.group("h", users...)
	ctx := context.Background()
	day := int64(24 * time.Hour / time.Millisecond)
	now := time.UnixMilli(100 * day)
	ack := func(user, dev string, at int64, items ...AckItem) {
		t.Helper()
		if _, err := s.AckDevice(ctx, user, dev, items, at); err != nil {
			t.Fatal(err)
		}
	}
	// ann: two devices 1,500 + 1,000 seqs apart over two conversations.
	ack("ann", "phone", now.UnixMilli()-day, AckItem{"g", 2000, 1}, AckItem{"h", 1000, 1})
	ack("ann", "laptop", now.UnixMilli()-2*day, AckItem{"g", 500, 1})
	// bob: two devices close together; the laptop's older-epoch cursor does
	// not count against the phone's newer one.
	ack("bob", "phone", now.UnixMilli()-day, AckItem{"g", 40, 2})
	ack("bob", "laptop", now.UnixMilli()-day, AckItem{"g", 30, 2}, AckItem{"h", 9000, 1})
	ack("bob", "phone", now.UnixMilli()-day, AckItem{"h", 9, 2})
	// cid: one device, last used 40 days ago; dan never pulled.
	ack("cid", "phone", now.UnixMilli()-40*day, AckItem{"g", 1, 1})
	// eve moved to the hot store: counted there, not on the main copy.
	ack("eve", "phone", now.UnixMilli()-day, AckItem{"g", 1, 1})
	if err := NewInboxRouter(s, hot, 0).MoveToHot(ctx, "eve"); err != nil {
		t.Fatal(err)
	}
	// fay: her devices were all evicted for idleness.
	ack("fay", "phone", now.UnixMilli()-50*day, AckItem{"g", 1, 1})
	if _, err := s.EvictDevices(ctx, "fay", now.Add(-30*24*time.Hour), 10); err != nil {
		t.Fatal(err)
	}

	var got DeviceCensus
	for _, st := range []*Store{s, hot} {
		nodes, err := st.ScanNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			// A small COUNT makes the census take many steps; the bound on
			// steps only stops a scan that never ends, however many keys
			// other tests left on a shared server.
			for cur, steps := uint64(0), 0; ; steps++ {
				c, next, err := st.CensusStep(ctx, n, cur, 50, now.Add(-30*24*time.Hour), 1000)
				if err != nil {
					t.Fatal(err)
				}
				got.Add(c)
				if cur = next; cur == 0 || steps > 1_000_000 {
					break
				}
			}
		}
	}
	// ann 2,500 apart > 1,000; bob 10 + 9 (h: the laptop's cursor is of an
	// older epoch, so it counts as 0 against the phone's 9).
	want := DeviceCensus{Users: 6, Idle: 3, MultiDevice: 2, Drifted: 1}
	got.Backlog = [UserBuckets]int64{} // its own test below
	if got != want {
		t.Fatalf("census %+v, want %+v", got, want)
	}
}

// TestCensusCountsTheInboxBacklogNoDeviceAckedByUserBucket: per user, the
// messages after their join that none of their devices acked in the
// conversation's epoch, summed into the user's bucket.
func TestCensusCountsTheInboxBacklogNoDeviceAckedByUserBucket(t *testing.T) {
	s := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	rs.group("g", "dan", "ann", "bob", "cid") // seq 1
	rs.group("h", "dan", "ann", "bob")        // seq 1
	for range 5 {
		rs.say("g", schemas.ConvType_CONV_TYPE_GROUP, "dan", "", "hi") // seqs 2 to 6
	}
	for range 3 {
		rs.say("h", schemas.ConvType_CONV_TYPE_GROUP, "dan", "", "hi") // seqs 2 to 4
	}
	ctx := context.Background()
	now := time.UnixMilli(rs.now)
	ack := func(user, dev string, items ...AckItem) {
		t.Helper()
		if _, err := s.AckDevice(ctx, user, dev, items, now.UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	epoch := func(conv string) uint64 {
		e, err := s.Client().HGet(ctx, s.keys.Inbox("ann"), conv+":e").Uint64()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	g, h := epoch("g"), epoch("h")
	ack("dan", "phone", AckItem{"g", 6, g}, AckItem{"h", 4, h})
	// ann: her laptop holds all of g, nothing of h: 4 of h.
	ack("ann", "phone", AckItem{"g", 4, g})
	ack("ann", "laptop", AckItem{"g", 6, g})
	// bob: 3 of g (the laptop's cursor is of another epoch).
	ack("bob", "phone", AckItem{"g", 3, g}, AckItem{"h", 4, h})
	ack("bob", "laptop", AckItem{"g", 6, g + 1})
	// cid never pulled: 6 of g (founding members join at 0).
	var want [UserBuckets]int64
	for u, n := range map[string]int64{"ann": 4, "bob": 3, "cid": 6, "dan": 0} {
		want[UserBucket(u)] += n
	}
	var got DeviceCensus
	nodes, err := s.ScanNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		for cur, steps := uint64(0), 0; ; steps++ {
			c, next, err := s.CensusStep(ctx, n, cur, 50, now.Add(-time.Hour), 1000)
			if err != nil {
				t.Fatal(err)
			}
			got.Add(c)
			if cur = next; cur == 0 || steps > 1_000_000 {
				break
			}
		}
	}
	if got.Backlog != want || got.BacklogUnmeasured != 0 {
		t.Fatalf("backlog by bucket %v (unmeasured %d), want %v", got.Backlog, got.BacklogUnmeasured, want)
	}
}
