package promreg

import "github.com/prometheus/client_golang/prometheus"

// All registers cs on reg in order and stops at the first that fails,
// returning its error. A nil reg registers nothing: the component then
// keeps its series to itself.
func All(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
