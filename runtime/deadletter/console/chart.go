package console

import (
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// palette colours the chart's groups, each by its key (see colours);
// other letters are grey.
var palette = []string{"#2f6fb3", "#d9822b", "#3a9a5b", "#c23b3b", "#7a52b3", "#8c6d3f", "#d4589c", "#2a9d9d", "#b59a1f", "#4a5bd4"}

const (
	otherColour = "#9a9a9a"
	chartGroups = 6 // the groups the chart draws apart; the rest are "other"
	// The plot's margins, in the chart's pixels: the counts' axis on the
	// left.
	chartLeft, chartRight = 40, 8
	minPlot               = 240 // the narrowest plot, in pixels: room for its labels
)

// colourOf is the colour a group's key takes, unless another group of
// the chart takes it first (see colours).
func colourOf(key string) string { return palette[preferred(key)] }

func preferred(key string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(len(palette)))
}

// colours gives each of keys (at most len(palette)) a colour derived from
// it, so that a group keeps its colour from one reading to the next
// however the counts change: its own (colourOf), or, when a group of a
// lower key takes that one, the next free one.
func colours(keys []string) map[string]string {
	used := make([]bool, len(palette))
	out := make(map[string]string, len(keys))
	for _, k := range slices.Sorted(slices.Values(keys)) {
		i := preferred(k)
		for n := 0; used[i] && n < len(palette); n++ {
			i = (i + 1) % len(palette)
		}
		used[i] = true
		out[k] = palette[i]
	}
	return out
}

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
	starts, series := h.result(chartGroups)
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
	const width, height, left, bottom, top = 720, 180, chartLeft, 24, 8
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
	plotW, plotH := width-left-chartRight, height-bottom-top
	// Few buckets are drawn at most as wide as minBuckets would be, on a
	// narrower chart (but wide enough for its labels), so that its bars
	// fill it from the first letter on.
	barW := max(plotW/n, 1)
	if maxW := plotW / minBuckets; barW > maxW {
		barW = max(maxW, (minPlot+n-1)/n)
	}
	v.Width = left + n*barW + chartRight
	gap := 0
	if barW > 4 {
		gap = 1
	}
	var keys []string
	for _, s := range series {
		if s.Key != otherKey {
			keys = append(keys, s.Key)
		}
	}
	fills := colours(keys)
	stack := make([]int, n)
	for _, s := range series {
		fill := otherColour
		label := "other groups"
		if s.Key != otherKey {
			fill = fills[s.Key]
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
				Title: fmt.Sprintf("%s from %s: %s", deadletter.Letters(c), starts[i].Format("2006-01-02 15:04"), label)})
		}
	}
	// The axis is labelled at its start, its middle (when there is room)
	// and its end.
	const label = "01-02 15:04"
	v.Ticks = append(v.Ticks, tickView{X: left, Label: starts[0].Format(label), Anchor: "start"})
	if mid := n / 2; n >= 4 {
		v.Ticks = append(v.Ticks, tickView{X: left + mid*barW, Label: starts[mid].Format(label), Anchor: "middle"})
	}
	v.Ticks = append(v.Ticks, tickView{X: left + n*barW, Label: starts[n-1].Add(widths[h.width]).Format(label), Anchor: "end"})
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
