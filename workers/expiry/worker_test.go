package expiry

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

const day = 24 * time.Hour

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// fixture is a store seeded through the real sequencing, inbox and ack
// scripts, ages measured back from the fake clock's now.
type fixture struct {
	store *redisstore.Store
	now   time.Time
	raw   map[string][]string // conversation -> timeline as seeded
}

// newFixture seeds:
//
//	g1 (group): join 45d, messages 40d 31d 29d 8d 1h; bob mentioned at 40d and 8d
//	d1 (direct): messages 35d 2d
//	bob's devices: "old" last used 40d ago, "phone" 1h ago
//
// The fake now is 8 days ahead of the machine's clock, so the dedupe bucket
// of the 8-day-old message still exists in Redis (its own expiry is in the
// future) but is past the dedupe window by the fake clock.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	s, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{store: s, now: time.Now().Add(8 * day).Truncate(time.Millisecond), raw: map[string][]string{}}
	ctx := context.Background()
	g := schemas.ConvType_CONV_TYPE_GROUP
	f.seed(t, "g1", g, schemas.Kind_KIND_MEMBER_JOIN, 45*day)
	var seq uint64
	mentions := []redisstore.InboxEvent{}
	for _, age := range []time.Duration{40 * day, 31 * day, 29 * day, 8 * day, time.Hour} {
		seq = f.seed(t, "g1", g, schemas.Kind_KIND_MESSAGE, age)
		if age == 40*day || age == 8*day {
			mentions = append(mentions, redisstore.InboxEvent{Kind: redisstore.InboxMentioned, Seq: seq, WriteMS: f.at(age)})
		}
	}
	for _, age := range []time.Duration{35 * day, 2 * day} {
		f.seed(t, "d1", schemas.ConvType_CONV_TYPE_DIRECT, schemas.Kind_KIND_MESSAGE, age)
	}
	up := redisstore.InboxUpdate{User: "bob", Conv: "g1", Form: redisstore.InboxGroup, Events: mentions}
	if _, errs := s.ApplyInboxes(ctx, []redisstore.InboxUpdate{up}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	for dev, age := range map[string]time.Duration{"old": 40 * day, "phone": time.Hour} {
		if _, err := s.AckDevice(ctx, "bob", dev, []redisstore.AckItem{{Conv: "g1", Seq: 2, Epoch: 1}}, f.at(age)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{"g1", "d1"} {
		f.raw[c], _ = rdb.LRange(ctx, s.Keys().Timeline(c), 0, -1).Result()
	}
	return f
}

func (f *fixture) at(age time.Duration) int64 { return f.now.Add(-age).UnixMilli() }

func (f *fixture) seed(t *testing.T, conv string, ct schemas.ConvType, kind schemas.Kind, age time.Duration) uint64 {
	t.Helper()
	m := &schemas.Message{ClientMsgId: fmt.Sprintf("%s-%d", conv, age), ConvId: conv, ConvType: ct,
		Sender: "alice", Kind: kind, ContentType: "text/plain", Body: []byte("hi")}
	if ct == schemas.ConvType_CONV_TYPE_DIRECT {
		m.Recipients = []string{"bob"}
	} else if kind == schemas.Kind_KIND_MEMBER_JOIN {
		m.Recipients, m.Body = []string{"alice", "bob", "carol"}, nil
	}
	res, err := f.store.Sequence(context.Background(), conv, []*schemas.Message{m}, nil, f.at(age))
	if err != nil || res.Items[0].Status != redisstore.SeqNew {
		t.Fatalf("seed %s: %+v (err %v)", conv, res, err)
	}
	return res.Items[0].Sequenced.Seq
}

func (f *fixture) worker(t *testing.T, reg prometheus.Registerer) *Worker {
	t.Helper()
	w, err := New(Config{ScanCount: 2, MaxPerCall: 2, Clock: func() time.Time { return f.now }, Metrics: reg}, f.store, nil)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// check asserts the state a complete sweep at f.now leaves.
func (f *fixture) check(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	rdb, k := f.store.Client(), f.store.Keys()
	for conv, kept := range map[string]int{"g1": 3, "d1": 1} {
		got, _ := rdb.LRange(ctx, k.Timeline(conv), 0, -1).Result()
		if want := f.raw[conv][len(f.raw[conv])-kept:]; !slices.Equal(got, want) {
			t.Fatalf("%s timeline holds %d entries, want its newest %d unchanged", conv, len(got), kept)
		}
	}
	if lane, _ := rdb.ZRange(ctx, k.Mentions("bob"), 0, -1).Result(); !slices.Equal(lane, []string{"g1:5"}) {
		t.Fatalf("bob's mention lane %v, want only the 8-day-old g1:5", lane)
	}
	if devs, _ := rdb.ZRange(ctx, k.Devices("bob"), 0, -1).Result(); !slices.Equal(devs, []string{"phone"}) {
		t.Fatalf("bob's devices %v, want phone only", devs)
	}
	buckets := f.dedupeDays(t, "g1")
	if want := []int64{redisstore.DayOf(f.at(time.Hour))}; !slices.Equal(buckets, want) {
		t.Fatalf("g1 dedupe buckets %v, want only today's %v", buckets, want)
	}
}

func (f *fixture) dedupeDays(t *testing.T, conv string) []int64 {
	t.Helper()
	keys, err := f.store.Client().Keys(context.Background(), strings.TrimSuffix(f.store.Keys().Dedupe(conv, 0), "0")+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var days []int64
	for _, key := range keys {
		ref, _ := f.store.Keys().ParseKey(key)
		d, _ := ref.DedupeDay()
		days = append(days, d)
	}
	sort.Slice(days, func(i, j int) bool { return days[i] < days[j] })
	return days
}

func TestSweepRemovesExactlyWhatIsPastItsWindowAndCountsIt(t *testing.T) {
	f := newFixture(t)
	if n := len(f.dedupeDays(t, "g1")); n != 2 {
		t.Fatalf("seeded g1 with %d live dedupe buckets, want 2 (8 days old and today)", n)
	}
	reg := prometheus.NewRegistry()
	w := f.worker(t, reg)
	got, err := w.SweepOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.check(t)
	want := Removed{Timeline: 4, Mentions: 1, Dedupe: 1, Devices: 1}
	got.Scanned, got.Busy = 0, 0
	if got != want {
		t.Fatalf("sweep reported %+v, want %+v", got, want)
	}
	for what, n := range map[string]int{whatTimeline: 4, whatMentions: 1, whatDedupe: 1, whatCursors: 1, whatPartitions: 0} {
		if v := counterValue(t, w.m.removed.WithLabelValues(what)); v != float64(n) {
			t.Fatalf("metric removed{what=%q} = %v, want %d", what, v, n)
		}
	}
	if v := counterValue(t, w.m.cycles); v != 1 {
		t.Fatalf("cycles = %v, want 1", v)
	}
	again, err := w.SweepOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if again.Timeline+again.Mentions+again.Dedupe+again.Devices != 0 {
		t.Fatalf("second sweep removed %+v, want nothing", again)
	}
}

func TestSweepKeepsEverythingWithinTheWindow(t *testing.T) {
	f := newFixture(t)
	f.now = f.now.Add(-50 * day) // before anything was old
	w := f.worker(t, nil)
	got, err := w.SweepOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Timeline+got.Mentions+got.Devices != 0 {
		t.Fatalf("sweep at a time when nothing is old removed %+v", got)
	}
	for conv, raw := range f.raw {
		now, _ := f.store.Client().LRange(context.Background(), f.store.Keys().Timeline(conv), 0, -1).Result()
		if !slices.Equal(now, raw) {
			t.Fatalf("%s timeline changed", conv)
		}
	}
}

func TestWorkersSweepingAtOnceRemoveEachThingOnce(t *testing.T) {
	f := newFixture(t)
	workers := []*Worker{f.worker(t, nil), f.worker(t, nil), f.worker(t, nil)}
	results := make([]Removed, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() {
			var err error
			if results[i], err = w.SweepOnce(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// A process that found the node busy left it to the holder; sweep
	// again until every worker got its turn, as Run would.
	for i, w := range workers {
		for results[i].Busy > 0 {
			time.Sleep(10 * time.Millisecond)
			r, err := w.SweepOnce(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			results[i].Busy = 0
			results[i].Add(r)
		}
	}
	var total Removed
	for _, r := range results {
		total.Add(r)
	}
	f.check(t)
	if total.Timeline != 4 || total.Mentions != 1 || total.Dedupe != 1 || total.Devices != 1 {
		t.Fatalf("workers together removed %+v, want each thing once", total)
	}
}

func TestRunSweepsWhenDueUntilItsContextEnds(t *testing.T) {
	f := newFixture(t)
	w := f.worker(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for counterValue(t, w.m.cycles) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("Run completed no sweep cycle")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v after its context ended, want nil", err)
	}
	f.check(t)
}

func TestConfigValidateNamesTheBadField(t *testing.T) {
	cases := []struct {
		cfg   Config
		field string
	}{
		{Config{}, ""},
		{Config{Retention: redisstore.Retention{Window: -1}}, "Window"},
		{Config{Retention: redisstore.Retention{Kinds: map[schemas.Kind]time.Duration{99: day}}}, "Kinds"},
		{Config{Retention: redisstore.Retention{ConvTypes: map[schemas.ConvType]time.Duration{schemas.ConvType_CONV_TYPE_GROUP: -day}}}, "ConvTypes"},
		{Config{HistoryRetention: 7 * day}, "HistoryRetention"},
		{Config{Interval: time.Millisecond}, "Interval"},
		{Config{ScanCount: -1}, "ScanCount"},
		{Config{MaxPerCall: -1}, "MaxPerCall"},
		{Config{Concurrency: -1}, "Concurrency"},
		{Config{Lease: time.Millisecond}, "Lease"},
		{Config{RetryMin: -1}, "RetryMin"},
		{Config{RetryMin: time.Second, RetryMax: time.Millisecond}, "RetryMax"},
	}
	for _, tc := range cases {
		err := tc.cfg.Validate()
		switch {
		case tc.field == "" && err != nil:
			t.Fatalf("%+v: unexpected error %v", tc.cfg, err)
		case tc.field != "" && (err == nil || !strings.Contains(err.Error(), tc.field)):
			t.Fatalf("%+v: error %v, want one naming %s", tc.cfg, err, tc.field)
		}
	}
}

func TestAMalformedKeyIsPassedOverNotRetriedForever(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	k := f.store.Keys()
	// A timeline whose head is no entry at all.
	f.store.Client().HSet(ctx, k.ConvMeta("bad"), "seq", 1, "first", 1, "epoch", 1, "type", "g")
	f.store.Client().RPush(ctx, k.Timeline("bad"), "garbage")
	w := f.worker(t, nil)
	if _, err := w.SweepOnce(ctx); err != nil {
		t.Fatalf("sweep stopped at a malformed key: %v", err)
	}
	f.check(t)
	if v := counterValue(t, w.m.malformed); v != 1 {
		t.Fatalf("malformed keys counted %v, want 1", v)
	}
}
