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
	s := promreg.On(reg)
	m := &metrics{
		rows:     s.Counter("offlinebox_history_rows_inserted_total", "Rows ClickHouse accepted (replayed records count again)."),
		failures: s.Counter("offlinebox_history_insert_failures_total", "INSERTs that failed; their records are retried, never skipped."),
		duration: s.Histogram("offlinebox_history_insert_duration_seconds", "Time of one INSERT into ClickHouse, failed ones included.",
			prometheus.ExponentialBuckets(0.005, 2, 14)),
		batchRows: s.Histogram("offlinebox_history_insert_batch_rows", "Rows per INSERT. Many small inserts strain ClickHouse: raise MaxPollRecords or the fetch wait.",
			prometheus.ExponentialBuckets(1, 4, 9)),
	}
	return m, s.Err()
}
