package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// series is one coloured set of bars, a value per category.
type series struct {
	name   string
	values []float64
}

// chart is a grouped bar chart: for every category a bar per series.
type chart struct {
	file, title, unit string
	categories        []string
	series            []series
	// log draws the value axis in powers of ten, for data spanning them.
	log bool
}

var palette = []string{"#2b6cb0", "#c05621", "#2f855a", "#6b46c1"}

const (
	width, height         = 640, 360
	left, right, top, bot = 90, 20, 50, 70
)

// svg renders the chart as a standalone SVG document. Every bar carries
// its series, category and value as data- attributes, so a reader (or a
// test) can check the drawing against the numbers.
func (c chart) svg() string {
	lo, hi := c.bounds()
	scale := func(v float64) float64 { // value to pixels above the axis
		plot := float64(height - top - bot)
		if c.log {
			if v <= 0 {
				return 0
			}
			return plot * (math.Log10(v) - math.Log10(lo)) / (math.Log10(hi) - math.Log10(lo))
		}
		return plot * v / hi
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<title>%s</title>`+"\n", esc(c.title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", left, esc(c.title))
	c.axis(&b, lo, hi, scale)
	groupW := float64(width-left-right) / float64(len(c.categories))
	barW := groupW * 0.8 / float64(len(c.series))
	for ci, cat := range c.categories {
		x0 := float64(left) + groupW*float64(ci) + groupW*0.1
		for si, s := range c.series {
			v := s.values[ci]
			h := scale(v)
			x := x0 + barW*float64(si)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" data-series="%s" data-category="%s" data-value="%g"><title>%s, %s: %s %s</title></rect>`+"\n",
				x, float64(height-bot)-h, barW-2, h, palette[si%len(palette)], esc(s.name), esc(cat), v,
				esc(s.name), esc(cat), short(v), esc(c.unit))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n",
				x+(barW-2)/2, float64(height-bot)-h-3, short(v))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x0+groupW*0.4, height-bot+16, esc(cat))
	}
	for si, s := range c.series {
		x := left + si*200
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			x, height-24, palette[si%len(palette)], x+16, height-14, esc(s.name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// axis draws the value axis with its ticks and unit.
func (c chart) axis(b *strings.Builder, lo, hi float64, scale func(float64) float64) {
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, height-bot)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, height-bot, width-right, height-bot)
	var ticks []float64
	if c.log {
		for v := lo; v <= hi*1.0001; v *= 10 {
			ticks = append(ticks, v)
		}
	} else {
		for i := 0; i <= 4; i++ {
			ticks = append(ticks, hi*float64(i)/4)
		}
	}
	for _, v := range ticks {
		y := float64(height-bot) - scale(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, width-right, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, short(v))
	}
	unit := c.unit
	if c.log {
		unit += " (log scale)"
	}
	fmt.Fprintf(b, `<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">%s</text>`+"\n",
		(top+height-bot)/2, (top+height-bot)/2, esc(unit))
}

// bounds is the value range of the axis: from 0 (or the power of ten at
// or below the smallest value, on a log axis) to a round top.
func (c chart) bounds() (lo, hi float64) {
	lo, hi = math.Inf(1), 0
	for _, s := range c.series {
		for _, v := range s.values {
			hi = math.Max(hi, v)
			if v > 0 {
				lo = math.Min(lo, v)
			}
		}
	}
	if hi <= 0 {
		return 1, 1
	}
	if c.log {
		floor := math.Pow(10, math.Floor(math.Log10(lo)))
		if floor == lo { // the smallest bar keeps a height
			floor /= 10
		}
		return floor, math.Pow(10, math.Ceil(math.Log10(hi)))
	}
	step := math.Pow(10, math.Floor(math.Log10(hi)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*step >= hi {
			return 0, m * step
		}
	}
	return 0, 10 * step
}

// short writes a value with an SI suffix: 1.7M, 3.4k, 61.5.
func short(v float64) string {
	for _, u := range []struct {
		div float64
		sfx string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= u.div {
			return trim(v/u.div) + u.sfx
		}
	}
	return trim(v)
}

func trim(v float64) string {
	s := fmt.Sprintf("%.3g", v)
	if strings.Contains(s, "e") {
		s = fmt.Sprintf("%.0f", v)
	}
	return s
}

func esc(s string) string { return html.EscapeString(s) }
