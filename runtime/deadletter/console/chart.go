package console

import (
	"fmt"
	"time"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// palette colours the chart's groups; other letters are grey.
var palette = []string{"#2f6fb3", "#d9822b", "#3a9a5b", "#c23b3b", "#7a52b3", "#8c6d3f"}

const otherColour = "#9a9a9a"

// chartView is an SVG chart drawn on the server: stacked bars, one per
// time bucket, a colour per group.
type chartView struct {
	Width, Height int
	Bars          []barView
	Legend        []legendView
	Ticks         []tickView
	Max           int
	Undated       int
	BaseY         int
	Bucket        string
}

type barView struct {
	X, Y, W, H int
	Fill       string
	Title      string
}

type legendView struct {
	Fill, Label, Key string
	Count            int
}

type tickView struct {
	X      int
	Label  string
	Anchor string // the SVG text-anchor
}

// chart draws h, naming each group by its reason from groups.
func chart(h *histogram, groups []deadletter.Group) *chartView {
	starts, series := h.result(len(palette))
	if len(starts) == 0 {
		if h.undated == 0 {
			return nil
		}
		return &chartView{Undated: h.undated}
	}
	reasons := map[string]string{}
	for _, g := range groups {
		reasons[g.Key] = g.Reason
	}
	const width, height, left, bottom, top = 720, 180, 40, 24, 8
	v := &chartView{Width: width, Height: height, Undated: h.undated, BaseY: height - bottom, Bucket: span(widths[h.width])}
	n := len(starts)
	totals := make([]int, n)
	for _, s := range series {
		for i, c := range s.Counts {
			totals[i] += c
		}
	}
	for _, t := range totals {
		v.Max = max(v.Max, t)
	}
	if v.Max == 0 {
		return v
	}
	plotW, plotH := width-left-8, height-bottom-top
	barW := max(plotW/n, 1)
	gap := 0
	if barW > 4 {
		gap = 1
	}
	stack := make([]int, n)
	for si, s := range series {
		fill := otherColour
		label := "other groups"
		if s.Key != otherKey {
			fill = palette[si%len(palette)]
			label = firstLine(reasons[s.Key], 80)
		}
		v.Legend = append(v.Legend, legendView{Fill: fill, Label: label, Key: s.Key, Count: s.Total})
		for i, c := range s.Counts {
			if c == 0 {
				continue
			}
			h := max(c*plotH/v.Max, 1)
			y := height - bottom - stack[i] - h
			stack[i] += h
			v.Bars = append(v.Bars, barView{X: left + i*barW, Y: y, W: barW - gap, H: h, Fill: fill,
				Title: fmt.Sprintf("%d letters from %s: %s", c, starts[i].Format("2006-01-02 15:04"), label)})
		}
	}
	for j, i := range []int{0, n / 2, n - 1} {
		if len(v.Ticks) > 0 && v.Ticks[len(v.Ticks)-1].X >= left+i*barW {
			continue
		}
		t := tickView{X: left + i*barW, Label: starts[i].Format("01-02 15:04"), Anchor: []string{"start", "middle", "end"}[j]}
		if j == 2 {
			t.X = left + (i+1)*barW
			t.Label = starts[i].Add(widths[h.width]).Format("01-02 15:04")
		}
		v.Ticks = append(v.Ticks, t)
	}
	return v
}

// span says a bucket width in words.
func span(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d day", d/(24*time.Hour)) + plural(int(d/(24*time.Hour)))
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hour", d/time.Hour) + plural(int(d/time.Hour))
	}
	return fmt.Sprintf("%d minute", d/time.Minute) + plural(int(d/time.Minute))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
