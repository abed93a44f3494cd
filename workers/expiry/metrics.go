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
	m := &metrics{
		removed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "offlinebox_expiry_removed_total",
			Help: "What expiry removed: timeline entries, mention references, dedupe buckets, device cursors, ClickHouse partitions, ClickHouse row groups given to a delete mutation.",
		}, []string{"what"}),
		scanned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_expiry_keys_scanned_total",
			Help: "Keys the expiry sweeps looked at.",
		}),
		cycles: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_expiry_cycles_total",
			Help: "Sweep cycles (a full scan of one Redis node) this process completed.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_expiry_errors_total",
			Help: "Sweep steps or partition drops that failed and will be retried.",
		}),
		malformed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_expiry_malformed_keys_total",
			Help: "Keys expiry passed over because their content does not follow the data model (run offlinebox verify).",
		}),
	}
	for _, w := range []string{whatTimeline, whatMentions, whatDedupe, whatCursors, whatPartitions, whatRowGroups} {
		m.removed.WithLabelValues(w)
	}
	if err := promreg.All(reg, m.removed, m.scanned, m.cycles, m.errors, m.malformed); err != nil {
		return nil, err
	}
	return m, nil
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
