package promreg

import "github.com/prometheus/client_golang/prometheus"

// Set makes a component's collectors and registers each on its registerer
// as it is made, so that a component names every series once, where it is
// defined, instead of again in a list to register. It keeps the first
// refusal and registers nothing after it, as All does; a nil registerer
// registers nothing.
type Set struct {
	reg prometheus.Registerer
	err error
}

// On returns a Set that registers on reg (nil: on nothing, for a component
// that registers its collectors itself).
func On(reg prometheus.Registerer) *Set { return &Set{reg: reg} }

// Err is the first registration refused, or nil.
func (s *Set) Err() error { return s.err }

// Add registers collectors made elsewhere, in order.
func (s *Set) Add(cs ...prometheus.Collector) {
	for _, c := range cs {
		keep(s, c)
	}
}

func keep[C prometheus.Collector](s *Set, c C) C {
	if s.reg != nil && s.err == nil {
		s.err = s.reg.Register(c)
	}
	return c
}

// Counter makes and registers a counter.
func (s *Set) Counter(name, help string) prometheus.Counter {
	return keep(s, prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help}))
}

// CounterVec makes and registers a counter by labels.
func (s *Set) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return keep(s, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels))
}

// Gauge makes and registers a gauge.
func (s *Set) Gauge(name, help string) prometheus.Gauge {
	return keep(s, prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help}))
}

// GaugeVec makes and registers a gauge by labels.
func (s *Set) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return keep(s, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels))
}

// Histogram makes and registers a histogram over buckets.
func (s *Set) Histogram(name, help string, buckets []float64) prometheus.Histogram {
	return keep(s, prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}))
}

// HistogramVec makes and registers a histogram over buckets by labels.
func (s *Set) HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return keep(s, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels))
}
