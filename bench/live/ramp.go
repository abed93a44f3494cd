package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

// rampDirectShare is the ramp's mix: of every step's publications 80 %
// are direct messages and 20 % go to the groups (of -group-size members),
// none to the large group, as the peer's measurements were taken.
const rampDirectShare = 0.8

// rampP99BoundMS is the latency bound of max_deliveries_per_sec_p99_100ms.
const rampP99BoundMS = 100

// rampStep is one step of the ramp: the phase measured at one offered
// rate of publications, what did not arrive, and each process's CPU per
// delivery.
type rampStep struct {
	PublicationsPerSec float64 `json:"publications_per_sec"`
	phase
	Missing    int64 `json:"missing"`
	Repushes   int64 `json:"repushes"`
	Duplicates int64 `json:"duplicates"`
	// CPUMSPerDeliveryByProcess: ms of each process's CPU (api0 with the
	// push stage, api1, redis) per delivery of the step.
	CPUMSPerDeliveryByProcess map[string]float64 `json:"cpu_ms_per_delivery_by_process"`
}

// parseRates reads -rates: publications per second, comma-separated,
// each above 0.
func parseRates(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || r <= 0 {
			return nil, fmt.Errorf("-rates: %q is not a rate above 0", f)
		}
		out = append(out, r)
	}
	return out, nil
}

// measureRamp streams each step's rate in turn to the connected fleet
// and names the highest step that kept p99 within the bound with nothing
// missing. The options' rates are restored after.
func (b *bench) measureRamp(ctx context.Context, fl *fleet, res *result) error {
	if len(b.o.rates) == 0 {
		return nil
	}
	saved := b.o
	defer func() { b.o = saved }()
	for _, r := range b.o.rates {
		b.o.directRate, b.o.groupRate, b.o.largeRate = r*rampDirectShare, r*(1-rampDirectShare), 0
		p, st, err := b.measureStream(ctx, fl, fmt.Sprintf("ramp-%g", r))
		if err != nil {
			return fmt.Errorf("ramp step %g/s: %w", r, err)
		}
		step := rampStep{PublicationsPerSec: r, phase: p, Missing: max(p.Expected-p.Deliveries, 0),
			Repushes: st.repushes.Load(), Duplicates: st.dups.Load(), CPUMSPerDeliveryByProcess: map[string]float64{}}
		for k, v := range p.CPUByProcess {
			if p.Deliveries > 0 {
				step.CPUMSPerDeliveryByProcess[k] = harness.Round(v*1000/float64(p.Deliveries), 4)
			}
		}
		res.Ramp = append(res.Ramp, step)
		b.log.Printf("ramp %g publications/s: %.0f deliveries/s, p50 %.1f ms, p99 %.1f ms, %.4f ms CPU per delivery, %d missing",
			r, p.DeliveriesPerSec, p.P50MS, p.P99MS, p.CPUMSPerDelivery, step.Missing)
	}
	res.MaxDeliveriesPerSecP99100MS = maxWithinBound(res.Ramp)
	return nil
}

// maxWithinBound is the highest deliveries/s of a step whose p99 is at
// most rampP99BoundMS with nothing missing (0 when none is).
func maxWithinBound(steps []rampStep) float64 {
	best := 0.0
	for _, s := range steps {
		if s.P99MS <= rampP99BoundMS && s.Missing == 0 && s.Deliveries > 0 {
			best = max(best, s.DeliveriesPerSec)
		}
	}
	return best
}
