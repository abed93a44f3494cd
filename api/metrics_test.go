package api

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestPullLatencyAndPayloadSizeAreObservedPerRoute(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, envOptions{metrics: reg})
	smallGroup(t, e)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	before := histograms(mfs, "POST /v1/sync")
	data := e.callOK(http.StatusOK, "POST", "/v1/sync", e.token("ann", "phone"), map[string]any{}, nil)
	if mfs, err = reg.Gather(); err != nil {
		t.Fatal(err)
	}
	after := histograms(mfs, "POST /v1/sync")
	lat, size := after["offlinebox_api_request_seconds"], after["offlinebox_api_response_bytes"]
	if lat.count != before["offlinebox_api_request_seconds"].count+1 || lat.sum <= before["offlinebox_api_request_seconds"].sum {
		t.Fatalf("pull latency not observed: before %+v after %+v", before, after)
	}
	if size.count != before["offlinebox_api_response_bytes"].count+1 ||
		size.sum-before["offlinebox_api_response_bytes"].sum != float64(len(data)) {
		t.Fatalf("payload size not observed as the %d bytes answered: before %+v after %+v", len(data), before, after)
	}
}

type histogram struct {
	count uint64
	sum   float64
}

// histograms reads the histograms of one route by name.
func histograms(mfs []*dto.MetricFamily, route string) map[string]histogram {
	out := map[string]histogram{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			if h == nil {
				continue
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" && l.GetValue() == route {
					out[mf.GetName()] = histogram{count: h.GetSampleCount(), sum: h.GetSampleSum()}
				}
			}
		}
	}
	return out
}
