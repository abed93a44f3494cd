package stream

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

func TestMetrics_RunnersOfOneGroupShareARegistryWithClientMetrics(t *testing.T) {
	const n = 30
	_, addrs := testenv.Kafka(t, 2, "in", "dead")
	adm := admin(t, addrs)
	produce(t, addrs, "in", "m", n)

	reg := prometheus.NewRegistry()
	cfg := testConfig(t, addrs, "shared", "in")
	cfg.Metrics = reg
	cfg.ClientMetrics = true
	h := HandlerFunc(func(context.Context, []*kgo.Record) ([]DeadLetter, error) { return nil, nil })
	start(t, cfg, h)
	start(t, cfg, h) // same group, same client id: same series
	waitCommittedToEnd(t, adm, "shared", "in")

	if v := metricValue(t, reg, "offlinebox_stream_records_handled_total", map[string]string{"group": "shared"}); v < n {
		t.Errorf("records_handled_total{group=shared} = %v, want at least %d", v, n)
	}
	if v := metricValue(t, reg, "offlinebox_kafka_connects_total", map[string]string{"group": "shared", "client_id": "shared"}); v < 1 {
		t.Errorf("kprom offlinebox_kafka_connects_total{group=shared} = %v, want at least 1", v)
	}
}
