package main

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// bar is a drawn bar as the SVG gives it.
type bar struct {
	series, category string
	value, height    float64
}

// parseBars reads an SVG document with encoding/xml, failing on anything
// not well-formed, and returns its bars.
func parseBars(t *testing.T, doc string) []bar {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(doc))
	var bars []bar
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return bars
		}
		if err != nil {
			t.Fatalf("SVG not well-formed: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "rect" {
			continue
		}
		a := map[string]string{}
		for _, at := range se.Attr {
			a[at.Name.Local] = at.Value
		}
		if _, ok := a["data-value"]; !ok {
			continue
		}
		v, err1 := strconv.ParseFloat(a["data-value"], 64)
		h, err2 := strconv.ParseFloat(a["height"], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("bar %v: unreadable numbers", a)
		}
		bars = append(bars, bar{a["data-series"], a["data-category"], v, h})
	}
}

// TestReportDrawsChartsThatReflectTheResults renders a results folder
// and checks each chart is well-formed SVG, is linked from the README,
// and draws one bar per value with the value of the JSON, taller bars
// for larger values.
func TestReportDrawsChartsThatReflectTheResults(t *testing.T) {
	dir := t.TempDir()
	inputs := map[string]string{
		"live":   `{"push_p50_ms": 7, "push_p99_ms": 60, "poll_p50_ms": 780, "poll_p99_ms": 1680}`,
		"storm":  `{"levels": [{"users": 100, "p99_ms": 220}, {"users": 500, "p99_ms": 900}], "baseline_levels": [{"users": 100, "p99_ms": 500}, {"users": 500, "p99_ms": 2400}]}`,
		"fanout": `{"sizes": [{"members": 50, "deliveries_per_sec": 470000, "naive_deliveries_per_sec": 56000}, {"members": 500, "deliveries_per_sec": 1700000, "naive_deliveries_per_sec": 63000}]}`,
		"vip":    `{"first_response_bytes": 44000, "full_catchup_bytes": 3400000, "baseline_first_response_bytes": 2000000, "messages": 100, "baseline_lost": 90}`,
	}
	for name, body := range inputs {
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := run(dir); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file  string
		want  map[string]float64 // "series/category" to value
		order [2]string          // the first bar is drawn taller than the second
	}{
		{"live-latency.svg", map[string]float64{"live push/p50": 7, "live push/p99": 60, "polling every 1 s/p50": 780, "polling every 1 s/p99": 1680},
			[2]string{"polling every 1 s/p99", "live push/p99"}},
		{"storm-p99.svg", map[string]float64{"ours/100 users": 220, "ours/500 users": 900, "baseline/100 users": 500, "baseline/500 users": 2400},
			[2]string{"baseline/500 users", "ours/500 users"}},
		{"fanout-deliveries.svg", map[string]float64{"ours/50 members": 470000, "ours/500 members": 1700000,
			"one round trip per recipient/50 members": 56000, "one round trip per recipient/500 members": 63000},
			[2]string{"ours/500 members", "ours/50 members"}},
		{"catchup-bytes.svg", map[string]float64{"ours/first response": 44000, "ours/full catch-up": 3400000,
			"flat inbox (loses 90 of 100)/first response": 2000000, "flat inbox (loses 90 of 100)/full catch-up": 2000000},
			[2]string{"ours/full catch-up", "flat inbox (loses 90 of 100)/full catch-up"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			doc, err := os.ReadFile(filepath.Join(dir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(readme), "("+tt.file+")") {
				t.Errorf("README.md does not show %s", tt.file)
			}
			bars := parseBars(t, string(doc))
			if len(bars) != len(tt.want) {
				t.Fatalf("%d bars, want %d", len(bars), len(tt.want))
			}
			height := map[string]float64{}
			for _, b := range bars {
				key := b.series + "/" + b.category
				want, ok := tt.want[key]
				if !ok || b.value != want {
					t.Errorf("bar %s = %v, want %v (present: %v)", key, b.value, want, ok)
				}
				if b.height <= 0 {
					t.Errorf("bar %s has height %v", key, b.height)
				}
				height[key] = b.height
			}
			if height[tt.order[0]] <= height[tt.order[1]] {
				t.Errorf("bar %s (%v px) not taller than %s (%v px)", tt.order[0], height[tt.order[0]], tt.order[1], height[tt.order[1]])
			}
		})
	}
}
