package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Two small SVG chart kinds, written by the bench itself (no plotting
// dependency): a line chart with a log-scaled x axis (growth with K) and a
// grouped bar chart with a log-scaled y axis (rates that differ by
// orders of magnitude).

// chart renders itself as an SVG document.
type chart interface{ svg() string }

// writeChart writes c to dir/name.
func writeChart(dir, name string, c chart) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(c.svg()), 0o644)
}

// point is one x, y value; label is the x tick text.
type point struct {
	x, y  float64
	label string
}

type series struct {
	name   string
	points []point
}

type lineChart struct {
	title, xLabel, yLabel string
	series                []series
}

// Layout of every chart, in pixels.
const (
	chartW, chartH       = 720, 420
	marginL, marginR     = 90, 30
	marginT, marginB     = 50, 110
	plotW, plotH         = chartW - marginL - marginR, chartH - marginT - marginB
	fontAttrs            = `font-family="Helvetica, Arial, sans-serif" font-size="12"`
	axisColor, gridColor = "#333", "#ddd"
)

var colors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"}

func (c lineChart) svg() string {
	var b strings.Builder
	header(&b, c.title)
	// x: log10(K), y: linear from 0 to the largest value.
	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range c.series {
		for _, p := range s.points {
			xmin, xmax, ymax = math.Min(xmin, p.x), math.Max(xmax, p.x), math.Max(ymax, p.y)
		}
	}
	ymax = niceCeil(ymax)
	lx := func(x float64) float64 {
		if xmax == xmin {
			return marginL + plotW/2
		}
		return marginL + (math.Log10(x)-math.Log10(xmin))/(math.Log10(xmax)-math.Log10(xmin))*plotW
	}
	ly := func(y float64) float64 { return marginT + plotH - math.Max(y, 0)/ymax*plotH }
	for i := 0; i <= 5; i++ {
		v := ymax * float64(i) / 5
		y := ly(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", marginL, y, marginL+plotW, y, gridColor)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" %s>%s</text>`+"\n", marginL-6, y+4, fontAttrs, formatValue(v))
	}
	for _, p := range c.series[0].points {
		x := lx(p.x)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" %s>%s</text>`+"\n", x, marginT+plotH+18, fontAttrs, p.label)
	}
	axes(&b, c.xLabel, c.yLabel)
	for i, s := range c.series {
		var pts []string
		for _, p := range s.points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", lx(p.x), ly(p.y)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`+"\n", lx(p.x), ly(p.y), colors[i])
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), colors[i])
		legend(&b, i, s.name)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

type bar struct {
	series string
	value  float64
}

type barGroup struct {
	label string
	bars  []bar
}

type barChart struct {
	title, yLabel string
	groups        []barGroup
	names         map[string]string // series -> legend text
}

func (c barChart) svg() string {
	var b strings.Builder
	header(&b, c.title)
	// y: log10 from a decade below the smallest value to a decade above
	// the largest.
	lo, hi := math.Inf(1), 0.0
	for _, g := range c.groups {
		for _, br := range g.bars {
			if br.value > 0 {
				lo, hi = math.Min(lo, br.value), math.Max(hi, br.value)
			}
		}
	}
	dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi <= dlo {
		dhi = dlo + 1
	}
	ly := func(v float64) float64 {
		if v <= 0 {
			return marginT + plotH
		}
		return marginT + plotH - (math.Log10(v)-dlo)/(dhi-dlo)*plotH
	}
	for d := dlo; d <= dhi; d++ {
		y := ly(math.Pow(10, d))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", marginL, y, marginL+plotW, y, gridColor)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" %s>%s</text>`+"\n", marginL-6, y+4, fontAttrs, formatValue(math.Pow(10, d)))
	}
	groupW := float64(plotW) / float64(len(c.groups))
	var order []string
	for gi, g := range c.groups {
		barW := groupW * 0.7 / float64(len(g.bars))
		x0 := marginL + groupW*float64(gi) + groupW*0.15
		for bi, br := range g.bars {
			x, y := x0+barW*float64(bi), ly(br.value)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, y, barW-4, marginT+plotH-y, colors[bi%len(colors)])
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" %s>%s</text>`+"\n", x+(barW-4)/2, y-4, fontAttrs, formatValue(br.value))
			if gi == 0 {
				order = append(order, br.series)
			}
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" %s>%s</text>`+"\n", marginL+groupW*(float64(gi)+0.5), marginT+plotH+18, fontAttrs, g.label)
	}
	axes(&b, "", c.yLabel)
	for i, s := range order {
		legend(&b, i, c.names[s])
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func header(b *strings.Builder, title string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`+"\n", chartW, chartH, chartW, chartH)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(b, `<text x="%d" y="28" text-anchor="middle" font-family="Helvetica, Arial, sans-serif" font-size="15" font-weight="bold">%s</text>`+"\n", chartW/2, escape(title))
}

func axes(b *strings.Builder, xLabel, yLabel string) {
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`+"\n", marginL, marginT+plotH, marginL+plotW, marginT+plotH, axisColor)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`+"\n", marginL, marginT, marginL, marginT+plotH, axisColor)
	if xLabel != "" {
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" %s>%s</text>`+"\n", marginL+plotW/2, marginT+plotH+40, fontAttrs, escape(xLabel))
	}
	fmt.Fprintf(b, `<text x="20" y="%d" text-anchor="middle" transform="rotate(-90 20 %d)" %s>%s</text>`+"\n", marginT+plotH/2, marginT+plotH/2, fontAttrs, escape(yLabel))
}

func legend(b *strings.Builder, i int, name string) {
	y := chartH - 50 + 18*i
	if i >= 2 {
		y = chartH - 50 + 18*(i-2)
	}
	x := marginL
	if i >= 2 {
		x = marginL + plotW/2
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="14" height="10" fill="%s"/>`+"\n", x, y-9, colors[i%len(colors)])
	fmt.Fprintf(b, `<text x="%d" y="%d" %s>%s</text>`+"\n", x+20, y, fontAttrs, escape(name))
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
