package main

import "testing"

func TestParseRatesRefusesWhatIsNotARateAboveZero(t *testing.T) {
	cases := []struct {
		in   string
		want []float64
		bad  bool
	}{
		{"", nil, false},
		{"50,200, 1000,2000", []float64{50, 200, 1000, 2000}, false},
		{"50,0", nil, true},
		{"50,x", nil, true},
		{"-1", nil, true},
	}
	for _, c := range cases {
		got, err := parseRates(c.in)
		if (err != nil) != c.bad {
			t.Fatalf("parseRates(%q) error %v, want error %v", c.in, err, c.bad)
		}
		if len(got) != len(c.want) {
			t.Fatalf("parseRates(%q) = %v, want %v", c.in, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("parseRates(%q) = %v, want %v", c.in, got, c.want)
			}
		}
	}
}

func TestMaxWithinBoundTakesTheHighestStepWithinP99AndNothingMissing(t *testing.T) {
	step := func(dps, p99 float64, missing int64) rampStep {
		s := rampStep{Missing: missing}
		s.DeliveriesPerSec, s.P99MS, s.Deliveries = dps, p99, 1
		return s
	}
	cases := []struct {
		name  string
		steps []rampStep
		want  float64
	}{
		{"none", nil, 0},
		{"all within", []rampStep{step(1000, 20, 0), step(4000, 60, 0)}, 4000},
		{"the top over the bound", []rampStep{step(1000, 20, 0), step(4000, 60, 0), step(20000, 900, 0)}, 4000},
		{"a step within p99 but missing deliveries", []rampStep{step(1000, 20, 0), step(4000, 60, 3)}, 1000},
		{"exactly at the bound", []rampStep{step(5000, 100, 0)}, 5000},
	}
	for _, c := range cases {
		if got := maxWithinBound(c.steps); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
