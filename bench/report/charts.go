package main

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// chartsFor reads a benchmark's JSON for the fields its charts draw and
// returns them; a benchmark without a chart returns none.
func chartsFor(name string, data []byte) ([]chart, error) {
	build, ok := chartBuilders[name]
	if !ok {
		return nil, nil
	}
	c, err := build(data)
	if err != nil {
		return nil, fmt.Errorf("%s.json: %w", name, err)
	}
	return []chart{c}, nil
}

var chartBuilders = map[string]func([]byte) (chart, error){
	"live":   liveChart,
	"storm":  stormChart,
	"fanout": fanoutChart,
	"vip":    catchupChart,
}

func liveChart(data []byte) (chart, error) {
	var r struct {
		PushP50 float64 `json:"push_p50_ms"`
		PushP99 float64 `json:"push_p99_ms"`
		PollP50 float64 `json:"poll_p50_ms"`
		PollP99 float64 `json:"poll_p99_ms"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return chart{}, err
	}
	return chart{file: "live-latency.svg", title: "Live push against polling: produce to device", unit: "ms",
		categories: []string{"p50", "p99"}, log: true,
		series: []series{{"live push", []float64{r.PushP50, r.PushP99}}, {"polling every 1 s", []float64{r.PollP50, r.PollP99}}},
	}, nil
}

func stormChart(data []byte) (chart, error) {
	type level struct {
		Users int     `json:"users"`
		P99   float64 `json:"p99_ms"`
	}
	var r struct {
		Levels   []level `json:"levels"`
		Baseline []level `json:"baseline_levels"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return chart{}, err
	}
	base := map[int]float64{}
	for _, l := range r.Baseline {
		base[l.Users] = l.P99
	}
	c := chart{file: "storm-p99.svg", title: "Reconnect storm: catch-up p99 by users at once", unit: "ms",
		series: []series{{name: "ours"}, {name: "baseline"}}}
	for _, l := range r.Levels {
		c.categories = append(c.categories, strconv.Itoa(l.Users)+" users")
		c.series[0].values = append(c.series[0].values, l.P99)
		c.series[1].values = append(c.series[1].values, base[l.Users])
	}
	return c, nil
}

func fanoutChart(data []byte) (chart, error) {
	var r struct {
		Sizes []struct {
			Members int     `json:"members"`
			Ours    float64 `json:"deliveries_per_sec"`
			Naive   float64 `json:"naive_deliveries_per_sec"`
		} `json:"sizes"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return chart{}, err
	}
	c := chart{file: "fanout-deliveries.svg", title: "Fanout: deliveries per second by group size", unit: "deliveries/s",
		log: true, series: []series{{name: "ours"}, {name: "one round trip per recipient"}}}
	for _, s := range r.Sizes {
		c.categories = append(c.categories, strconv.Itoa(s.Members)+" members")
		c.series[0].values = append(c.series[0].values, s.Ours)
		c.series[1].values = append(c.series[1].values, s.Naive)
	}
	return c, nil
}

func catchupChart(data []byte) (chart, error) {
	var r struct {
		First        float64 `json:"first_response_bytes"`
		Full         float64 `json:"full_catchup_bytes"`
		BaseFirst    float64 `json:"baseline_first_response_bytes"`
		Messages     int     `json:"messages"`
		BaselineLost int     `json:"baseline_lost"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return chart{}, err
	}
	// The flat inbox answers everything it kept in one response.
	return chart{file: "catchup-bytes.svg", title: "VIP catch-up: bytes on the wire", unit: "bytes",
		categories: []string{"first response", "full catch-up"}, log: true,
		series: []series{{"ours", []float64{r.First, r.Full}},
			{fmt.Sprintf("flat inbox (loses %d of %d)", r.BaselineLost, r.Messages), []float64{r.BaseFirst, r.BaseFirst}}},
	}, nil
}
