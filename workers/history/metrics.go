package history

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/promreg"
)

// metrics are the sink's Prometheus series.
type metrics struct {
	rows      prometheus.Counter
	failures  prometheus.Counter
	duration  prometheus.Histogram
	batchRows prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		rows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_history_rows_inserted_total",
			Help: "Rows ClickHouse accepted (replayed records count again).",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_history_insert_failures_total",
			Help: "INSERTs that failed; their records are retried, never skipped.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "offlinebox_history_insert_duration_seconds",
			Help:    "Time of one INSERT into ClickHouse, failed ones included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		batchRows: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "offlinebox_history_insert_batch_rows",
			Help:    "Rows per INSERT. Many small inserts strain ClickHouse: raise MaxPollRecords or the fetch wait.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 9),
		}),
	}
	if err := promreg.All(reg, m.rows, m.failures, m.duration, m.batchRows); err != nil {
		return nil, err
	}
	return m, nil
}
