package fanout

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

func TestHotMeterReportsOnlyUsersFarAboveTheMean(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	type step struct {
		at    time.Duration
		user  string
		n     int
		hot   bool // reported hot by this step
		count int  // hot users after this step
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"even load is normal", []step{
			{0, "a", 50, false, 0}, {time.Second, "b", 50, false, 0}, {2 * time.Second, "c", 50, false, 0},
		}},
		{"one user far above the rest is reported once", []step{
			{0, "a", 2, false, 0}, {0, "b", 2, false, 0}, {0, "c", 2, false, 0},
			{time.Second, "star", 40, true, 1}, {2 * time.Second, "star", 40, false, 1},
		}},
		{"a busy user below the absolute floor is not hot", []step{
			{0, "a", 1, false, 0}, {0, "b", 1, false, 0}, {time.Second, "star", 9, false, 0},
		}},
		{"the window slides: the previous window still counts in part", []step{
			{0, "a", 1, false, 0}, {0, "b", 1, false, 0}, {50 * time.Second, "star", 8, false, 0},
			{70 * time.Second, "star", 6, true, 1},
		}},
		{"a user who calmed down is no longer hot", []step{
			{0, "a", 1, false, 0}, {0, "star", 40, true, 1},
			{150 * time.Second, "a", 1, false, 0},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newHotMeter(time.Minute, 5, 10)
			for i, s := range tc.steps {
				hot, rate, line := m.observe(t0.Add(s.at), s.user, s.n)
				if hot != s.hot || m.hotCount() != s.count {
					t.Fatalf("step %d (%s +%d at %v): hot %v count %d (rate %.1f, line %.1f); want hot %v count %d",
						i, s.user, s.n, s.at, hot, m.hotCount(), rate, line, s.hot, s.count)
				}
			}
		})
	}
}

func TestHotUserIsReportedAndMovedToTheHotRedis(t *testing.T) {
	reg := prometheus.NewRegistry()
	addr := testenv.RedisAddr(t)
	hotAddr, err := redisstore.ParseAddr("redis://"+addr+"/1", false)
	if err != nil {
		t.Fatal(err)
	}
	hotRDB := hotAddr.Dial(redisstore.DialOptions{})
	t.Cleanup(func() { _ = hotRDB.Close() })
	h := newHarness(t, Config{Metrics: reg, HotMinWrites: 10, HotFactor: 3, HotRoute: true, HotRedis: hotRDB})
	f := h.fanout(nil)
	ctx := context.Background()
	var poll []*schemas.Message
	for i := range 30 {
		from := fmt.Sprintf("fan%02d", i)
		poll = append(poll, msg("dm-"+from, "hi", from, to("star")))
	}
	handle(t, f, records(poll...))

	if got := gauge(t, reg, "offlinebox_fanout_hot_users"); got != 1 {
		t.Fatalf("hot users gauge %v, want 1", got)
	}
	k := h.store.Keys()
	if ok, _ := h.rdb.SIsMember(ctx, k.HotUsers(), "star").Result(); !ok {
		t.Fatal("star is not listed as hot")
	}
	if n, _ := h.rdb.Exists(ctx, k.Inbox("star")).Result(); n != 0 {
		t.Fatal("star's inbox is still on the main Redis")
	}
	// Later writes go to the hot Redis, where the inbox moved whole (six
	// fields a conversation: l, u, r, j, t, e).
	handle(t, f, records(msg("dm-fan00", "again", "fan00", to("star"))))
	ib, err := hotRDB.HGetAll(ctx, k.Inbox("star")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(ib) != 30*5+1 || ib[redisstore.InboxIndexed] != "1" || ib["dm-fan00:l"] != "2" || ib["dm-fan29:l"] != "1" { // and the list index mark
		t.Fatalf("star's inbox on the hot Redis has %d fields (dm-fan00 last %s), want all 30 conversations", len(ib), ib["dm-fan00:l"])
	}
	// A fan was not moved.
	if u, _ := h.rdb.HGet(ctx, k.Inbox("fan00"), "dm-fan00:r").Result(); u != "2" {
		t.Fatalf("fan00's read seq on the main Redis is %q, want 2", u)
	}
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}
