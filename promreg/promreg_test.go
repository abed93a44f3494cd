package promreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestAllRegistersEveryCollectorAndStopsAtTheFirstRefused(t *testing.T) {
	a := prometheus.NewCounter(prometheus.CounterOpts{Name: "a_total", Help: "a"})
	b := prometheus.NewCounter(prometheus.CounterOpts{Name: "b_total", Help: "b"})
	tests := []struct {
		name    string
		reg     func() prometheus.Registerer
		cs      []prometheus.Collector
		wantErr bool
	}{
		{"nil registerer registers nothing", func() prometheus.Registerer { return nil }, []prometheus.Collector{a, a}, false},
		{"distinct collectors all registered", func() prometheus.Registerer { return prometheus.NewRegistry() }, []prometheus.Collector{a, b}, false},
		{"a twin refused", func() prometheus.Registerer { return prometheus.NewRegistry() }, []prometheus.Collector{a, a}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := tt.reg()
			err := All(reg, tt.cs...)
			if (err != nil) != tt.wantErr {
				t.Fatalf("All: err %v, want error %v", err, tt.wantErr)
			}
			if r, ok := reg.(*prometheus.Registry); ok && !tt.wantErr {
				if mfs, _ := r.Gather(); len(mfs) != len(tt.cs) {
					t.Fatalf("gathered %d families, want %d", len(mfs), len(tt.cs))
				}
			}
		})
	}
}

func TestSetRegistersAsItMakesAndKeepsTheFirstRefusal(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := On(reg)
	s.Counter("a_total", "a")
	s.CounterVec("b_total", "b", "l").WithLabelValues("x")
	s.Gauge("c", "c")
	s.Histogram("d", "d", []float64{1})
	if err := s.Err(); err != nil {
		t.Fatalf("Err: %v", err)
	}
	if mfs, _ := reg.Gather(); len(mfs) != 4 {
		t.Fatalf("gathered %d families, want 4", len(mfs))
	}
	s.Counter("a_total", "a")
	s.Gauge("e", "e")
	if s.Err() == nil {
		t.Fatal("a twin was not refused")
	}
	if mfs, _ := reg.Gather(); len(mfs) != 4 {
		t.Fatalf("gathered %d families after a refusal, want 4: nothing registers after it", len(mfs))
	}
	if c := On(nil).Counter("a_total", "a"); c == nil {
		t.Fatal("no counter made without a registerer")
	}
}
