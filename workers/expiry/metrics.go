package expiry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/promreg"
)

// metrics are the worker's Prometheus series.
type metrics struct {
	removed *prometheus.CounterVec
	scanned prometheus.Counter
	cycles  prometheus.Counter
	errors  prometheus.Counter
	// malformed counts keys expiry passed over because their content does
	// not follow the data model.
	malformed prometheus.Counter
}

// Values of the "what" label of offlinebox_expiry_removed_total.
const (
	whatTimeline   = "timeline"
	whatMentions   = "mentions"
	whatDedupe     = "dedupe"
	whatCursors    = "cursors"
	whatPartitions = "partitions"
	whatRowGroups  = "history_row_groups"
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	s := promreg.On(reg)
	m := &metrics{
		removed: s.CounterVec("offlinebox_expiry_removed_total",
			"What expiry removed: timeline entries, mention references, dedupe buckets, device cursors, ClickHouse partitions, ClickHouse row groups given to a delete mutation.", "what"),
		scanned:   s.Counter("offlinebox_expiry_keys_scanned_total", "Keys the expiry sweeps looked at."),
		cycles:    s.Counter("offlinebox_expiry_cycles_total", "Sweep cycles (a full scan of one Redis node) this process completed."),
		errors:    s.Counter("offlinebox_expiry_errors_total", "Sweep steps or partition drops that failed and will be retried."),
		malformed: s.Counter("offlinebox_expiry_malformed_keys_total", "Keys expiry passed over because their content does not follow the data model (run offlinebox verify)."),
	}
	for _, w := range []string{whatTimeline, whatMentions, whatDedupe, whatCursors, whatPartitions, whatRowGroups} {
		m.removed.WithLabelValues(w)
	}
	return m, s.Err()
}

func (m *metrics) add(r Removed) {
	m.removed.WithLabelValues(whatTimeline).Add(float64(r.Timeline))
	m.removed.WithLabelValues(whatMentions).Add(float64(r.Mentions))
	m.removed.WithLabelValues(whatDedupe).Add(float64(r.Dedupe))
	m.removed.WithLabelValues(whatCursors).Add(float64(r.Devices))
	m.removed.WithLabelValues(whatPartitions).Add(float64(r.Partitions))
	m.removed.WithLabelValues(whatRowGroups).Add(float64(r.RowGroups))
	m.scanned.Add(float64(r.Scanned))
}
