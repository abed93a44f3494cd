package api

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/promreg"
)

// metrics of the API: pull latency and payload sizes per route (a payload
// that jumps to megabytes means slicing stopped working), and how sync
// answers look.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	bytes    *prometheus.HistogramVec
	rebases  *prometheus.CounterVec
	syncMsgs prometheus.Histogram
	// queueWait: how long requests waited for a slot (only those that
	// found none free).
	queueWait prometheus.Histogram
	// coded counts the decoded bytes of answers by the content coding they
	// went in (offlinebox_api_response_bytes has the bytes on the wire).
	coded *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	s := promreg.On(reg)
	m := &metrics{
		requests: s.CounterVec("offlinebox_api_requests_total", "API requests by route and status code.", "route", "code"),
		latency: s.HistogramVec("offlinebox_api_request_seconds", "API request latency by route.",
			prometheus.ExponentialBuckets(0.001, 2.5, 12), "route"),
		bytes: s.HistogramVec("offlinebox_api_response_bytes", "API response body size on the wire by route.",
			prometheus.ExponentialBuckets(256, 2, 14), "route"),
		rebases: s.CounterVec("offlinebox_sync_rebases_total", "Conversations answered with a rebase, by reason.", "reason"),
		syncMsgs: s.Histogram("offlinebox_sync_messages", "Messages (mentions included) per sync answer.",
			prometheus.ExponentialBuckets(1, 2, 12)),
		queueWait: s.Histogram("offlinebox_api_queue_wait_seconds", "Time requests waited for a slot among MaxInFlight, of those that found none free.",
			prometheus.ExponentialBuckets(0.001, 2.5, 12)),
		coded: s.CounterVec("offlinebox_api_response_decoded_bytes_total", "Bytes of API answers before their content coding, by coding.", "coding"),
	}
	return m, s.Err()
}

func (m *metrics) observe(route string, status, size int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
	m.bytes.WithLabelValues(route).Observe(float64(size))
}
