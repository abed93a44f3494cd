package census

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/promreg"

	"github.com/offlinebox/offlinebox/redisstore"
)

// gauges are the census's Prometheus series, set once per complete pass.
type gauges struct {
	users, idle, multi, drifted, share, done, threshold prometheus.Gauge
	backlog                                             *prometheus.GaugeVec
	unmeasured                                          prometheus.Gauge
}

func newGauges(reg prometheus.Registerer, threshold uint64) (gauges, error) {
	s := promreg.On(reg)
	g := gauges{
		users: s.Gauge("offlinebox_users", "Users with an inbox, as of the last complete device census."),
		idle: s.Gauge("offlinebox_users_not_pulled",
			"Users none of whose devices acked within the census idle window (30 days by default), never-pulled users included."),
		multi: s.Gauge("offlinebox_users_multi_device", "Users with two or more devices."),
		drifted: s.Gauge("offlinebox_users_device_drift",
			"Users whose devices' cursors differ by more than the drift threshold (seqs summed over conversations)."),
		share: s.Gauge("offlinebox_users_device_drift_ratio",
			"Share (0 to 1) of users with two or more devices whose devices differ by more than the drift threshold."),
		done: s.Gauge("offlinebox_device_census_completed_timestamp_seconds", "Unix time the last device census completed."),
		threshold: s.Gauge("offlinebox_device_census_drift_threshold",
			"The drift threshold N of the census: seqs, summed over conversations, by which a user's devices may differ."),
		backlog: s.GaugeVec("offlinebox_inbox_backlog_messages",
			"Messages in users' inboxes that none of their devices acked (large groups aside), by user hash bucket (as offlinebox_fanout_inbox_writes_total), as of the last complete device census.",
			"user_bucket"),
		unmeasured: s.Gauge("offlinebox_inbox_backlog_unmeasured_users",
			"Users whose inbox index was too large for the census to read their backlog, as of the last complete census."),
	}
	g.threshold.Set(float64(threshold))
	if err := s.Err(); err != nil {
		return g, fmt.Errorf("census: register metrics: %w", err)
	}
	return g, nil
}

// publish sets the gauges to the counts of a complete pass that ended at
// unixSeconds.
func (g gauges) publish(t redisstore.DeviceCensus, unixSeconds float64) {
	g.users.Set(float64(t.Users))
	g.idle.Set(float64(t.Idle))
	g.multi.Set(float64(t.MultiDevice))
	g.drifted.Set(float64(t.Drifted))
	share := 0.0
	if t.MultiDevice > 0 {
		share = float64(t.Drifted) / float64(t.MultiDevice)
	}
	g.share.Set(share)
	for b, n := range t.Backlog {
		g.backlog.WithLabelValues(strconv.Itoa(b)).Set(float64(n))
	}
	g.unmeasured.Set(float64(t.BacklogUnmeasured))
	g.done.Set(unixSeconds)
}
