package stream

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kprom"

	"github.com/offlinebox/offlinebox/promreg"
)

// metrics are the runner's Prometheus collectors. They exist (unregistered)
// when Config.Metrics is nil, so the runner never branches on them.
type metrics struct {
	handled       *prometheus.CounterVec   // topic
	dead          *prometheus.CounterVec   // topic
	retries       *prometheus.CounterVec   // topic
	commitFailed  prometheus.Counter       //
	handleSeconds *prometheus.HistogramVec // topic
	batchRecords  *prometheus.HistogramVec // topic
	lag           *prometheus.GaugeVec     // topic, partition
}

func newMetrics(reg prometheus.Registerer, group string) (*metrics, error) {
	// made here, registered below: a twin already registered is shared
	u := promreg.On(nil)
	m := &metrics{
		handled:      u.CounterVec("offlinebox_stream_records_handled_total", "Records whose Handle call returned nil.", "topic"),
		dead:         u.CounterVec("offlinebox_stream_dead_letters_total", "Records produced to the dead-letter topic and acknowledged, by source topic.", "topic"),
		retries:      u.CounterVec("offlinebox_stream_handler_retries_total", "Failed Handle calls and dead-letter produces that were retried.", "topic"),
		commitFailed: u.Counter("offlinebox_stream_commit_failures_total", "Offset commits that failed (the offsets stay pending and are committed again)."),
		handleSeconds: u.HistogramVec("offlinebox_stream_handle_duration_seconds", "Duration of one Handle call.",
			prometheus.ExponentialBuckets(0.0005, 2.5, 12), "topic"),
		batchRecords: u.HistogramVec("offlinebox_stream_batch_records", "Records given to one Handle call.",
			[]float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000}, "topic"),
		lag: u.GaugeVec("offlinebox_stream_consumer_lag",
			"Records between the group's committed offset and the log end, per partition this member owns (measured every LagInterval).", "topic", "partition"),
	}
	if reg == nil {
		return m, nil
	}
	reg = prometheus.WrapRegistererWith(prometheus.Labels{"group": group}, reg)
	var err error
	m.handled = register(reg, m.handled, &err)
	m.dead = register(reg, m.dead, &err)
	m.retries = register(reg, m.retries, &err)
	m.commitFailed = register(reg, m.commitFailed, &err)
	m.handleSeconds = register(reg, m.handleSeconds, &err)
	m.batchRecords = register(reg, m.batchRecords, &err)
	m.lag = register(reg, m.lag, &err)
	if err != nil {
		return nil, fmt.Errorf("register stream metrics: %w", err)
	}
	return m, nil
}

// register registers c, or returns the collector already registered under
// the same name and labels: two runners of one group in one process (a
// test, a restart) share their series instead of failing.
func register[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	*errp = errors.Join(*errp, err)
	return c
}

func (m *metrics) setLag(topic string, partition int32, lag int64) {
	m.lag.WithLabelValues(topic, strconv.Itoa(int(partition))).Set(float64(max(lag, 0)))
}

func (m *metrics) forgetLag(topic string, partition int32) {
	m.lag.DeleteLabelValues(topic, strconv.Itoa(int(partition)))
}

// ClientMetrics is the option that registers franz-go's kprom metrics of a
// client on reg (offlinebox_kafka_*: connections, bytes, records, errors
// per broker), labelled group and client_id. The runner uses it for its
// group member; give it to NewProducer for a producer (group "producer").
func ClientMetrics(reg prometheus.Registerer, group string) kgo.Opt {
	return kgo.WithHooks(kprom.NewMetrics("offlinebox_kafka",
		kprom.Registerer(sharedRegisterer{reg}),
		kprom.WithStaticLabel(map[string]string{"group": group}),
		kprom.WithClientLabel()))
}

// sharedRegisterer lets collectors that register with MustRegister (kprom
// does, through promauto) meet an already registered twin without a panic:
// a second client of the same group in one process then reports through
// the first one's series only.
type sharedRegisterer struct{ prometheus.Registerer }

func (s sharedRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := s.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err)
			}
		}
	}
}
