package census

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
)

func censusStore(t *testing.T) *redisstore.Store {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	s, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// gaugeValues reads every gauge of reg by name.
func gaugeValues(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if g := m.GetGauge(); g != nil {
				out[mf.GetName()] += g.GetValue() // summed over labels
			}
		}
	}
	return out
}

func TestCensusPublishesUsersNotPullingAndDeviceDrift(t *testing.T) {
	s := censusStore(t)
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000)
	day := 24 * time.Hour
	seed := func(user string, acks map[string]time.Duration, seq uint64) {
		t.Helper()
		if err := s.Client().HSet(ctx, s.Keys().Inbox(user), "g:l", 1).Err(); err != nil {
			t.Fatal(err)
		}
		for dev, ago := range acks {
			if _, err := s.AckDevice(ctx, user, dev, []redisstore.AckItem{{Conv: "g", Seq: seq, Epoch: 1}}, now.Add(-ago).UnixMilli()); err != nil {
				t.Fatal(err)
			}
			seq *= 10
		}
	}
	seed("ann", map[string]time.Duration{"phone": day, "laptop": 2 * day}, 500) // 500 and 5,000: drifted
	seed("bob", map[string]time.Duration{"phone": day, "laptop": 3 * day}, 1)   // 1 and 10: close
	seed("cid", map[string]time.Duration{"phone": 31 * day}, 1)                 // not pulled for 31 days
	seed("dan", nil, 0)                                                         // never pulled
	reg := prometheus.NewRegistry()
	w, err := New(Config{Pause: time.Millisecond, StepCount: 1000, Metrics: reg, Clock: func() time.Time { return now }},
		redisstore.NewInboxRouter(s, nil, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	got := gaugeValues(t, reg)
	want := map[string]float64{
		"offlinebox_users": 4, "offlinebox_users_not_pulled": 2, "offlinebox_users_multi_device": 2,
		"offlinebox_users_device_drift": 1, "offlinebox_users_device_drift_ratio": 0.5,
		"offlinebox_device_census_completed_timestamp_seconds": float64(now.Unix()),
		"offlinebox_device_census_drift_threshold":             DefaultDriftThreshold,
		// Each inbox holds g up to 1 of an epoch no device acked in.
		"offlinebox_inbox_backlog_messages": 4,
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v", name, got[name], v)
		}
	}
}

func TestCensusWaitsForAStoreThatIsDownAndPublishesNoPartialCount(t *testing.T) {
	s := censusStore(t)
	ctx := context.Background()
	if err := s.Client().HSet(ctx, s.Keys().Inbox("ann"), "g:l", 1).Err(); err != nil {
		t.Fatal(err)
	}
	down, err := redisstore.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}), redisstore.Config{Prefix: "x:"})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	w, err := New(Config{Pause: time.Millisecond, Metrics: reg, Logger: quietLogger(t)}, redisstore.NewInboxRouter(s, down, 0))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := w.RunOnce(ctx); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("census with a store down: %v, want it to keep retrying until the context ends", err)
	}
	if g := gaugeValues(t, reg); g["offlinebox_users"] != 0 || g["offlinebox_device_census_completed_timestamp_seconds"] != 0 {
		t.Fatalf("a partial census was published: %v", g)
	}
	if err := w.Run(ctx); err != nil {
		t.Fatalf("Run after the context ended: %v, want nil", err)
	}
}

func TestConfigNamesTheFieldOutOfRange(t *testing.T) {
	cases := []struct {
		cfg   Config
		field string
	}{
		{Config{Every: -time.Second}, "Every"},
		{Config{Pause: -time.Second}, "Pause"},
		{Config{StepCount: -1}, "StepCount"},
		{Config{IdleAfter: -time.Hour}, "IdleAfter"},
	}
	for _, tc := range cases {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: %v, want an error naming %s", tc.cfg, err, tc.field)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

func quietLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}
