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
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "offlinebox_api_requests_total", Help: "API requests by route and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "offlinebox_api_request_seconds", Help: "API request latency by route.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}, []string{"route"}),
		bytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "offlinebox_api_response_bytes", Help: "API response body size on the wire by route.",
			Buckets: prometheus.ExponentialBuckets(256, 2, 14),
		}, []string{"route"}),
		rebases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "offlinebox_sync_rebases_total", Help: "Conversations answered with a rebase, by reason.",
		}, []string{"reason"}),
		syncMsgs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "offlinebox_sync_messages", Help: "Messages (mentions included) per sync answer.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12),
		}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "offlinebox_api_queue_wait_seconds", Help: "Time requests waited for a slot among MaxInFlight, of those that found none free.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}),
		coded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "offlinebox_api_response_decoded_bytes_total", Help: "Bytes of API answers before their content coding, by coding.",
		}, []string{"coding"}),
	}
	if err := promreg.All(reg, m.requests, m.latency, m.bytes, m.rebases, m.syncMsgs, m.queueWait, m.coded); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) observe(route string, status, size int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
	m.bytes.WithLabelValues(route).Observe(float64(size))
}
