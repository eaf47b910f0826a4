package console

import (
	"fmt"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// The chart's time axis starts at the bucket of the first letter: no
// empty buckets before it, whatever the span of the letters (a span just
// past maxBuckets is widened into few buckets), and a clock behind the
// letters adds none.
func TestTheChartStartsAtTheFirstLetter(t *testing.T) {
	first := time.Date(2026, 11, 30, 9, 2, 30, 0, time.UTC)
	for _, span := range []time.Duration{0, 3 * time.Minute, 50 * time.Minute, 4 * time.Hour, 49 * time.Hour, 40 * 24 * time.Hour} {
		for _, read := range []time.Duration{time.Second, time.Hour, -time.Hour} {
			h := newHistogram()
			h.add("a", first)
			h.add("b", first.Add(span/2))
			h.add("a", first.Add(span))
			h.extend(first.Add(span + read))
			starts, series := h.result(chartGroups)
			w := widths[h.width]
			if len(starts) == 0 || first.Before(starts[0]) || !first.Before(starts[0].Add(w)) {
				t.Fatalf("span %v, read %v later: the chart starts at %v, %v buckets, not at the first letter's, at %v", span, read, starts[0], w, first)
			}
			if len(starts) > maxBuckets {
				t.Fatalf("span %v: %d buckets", span, len(starts))
			}
			if series[0].Counts[0] == 0 {
				t.Fatalf("span %v: the first bucket is empty: %v", span, series)
			}
			v := chart(h, nil)
			if v.Bars[0].X != chartLeft || v.Ticks[0].Label != starts[0].Format("01-02 15:04") {
				t.Fatalf("span %v: the first bar is at %d, the first tick says %q", span, v.Bars[0].X, v.Ticks[0].Label)
			}
			// The axis ends at the plot's right end: the chart is no wider
			// than its buckets.
			if end := v.Ticks[len(v.Ticks)-1].X; end != v.Width-chartRight || (end-chartLeft)%len(starts) != 0 {
				t.Fatalf("span %v: the axis ends at %d, the chart %d wide for %d buckets", span, end, v.Width, len(starts))
			}
		}
	}
}

// Each group's colour is derived from its key: the same whatever the
// other groups' counts, and two groups of one chart never share one.
func TestGroupColoursComeFromTheirKeys(t *testing.T) {
	var keys []string
	for i := range 200 {
		keys = append(keys, fmt.Sprintf("%08x", i*2654435761%(1<<32)))
	}
	seen := map[string]bool{}
	for _, k := range keys {
		seen[colourOf(k)] = true
	}
	if len(seen) != len(palette) {
		t.Fatalf("200 keys take %d colours of %d", len(seen), len(palette))
	}
	for i := 0; i+chartGroups <= len(keys); i++ {
		set := keys[i : i+chartGroups]
		cs := colours(set)
		used := map[string]string{}
		for _, k := range set {
			if other, ok := used[cs[k]]; ok {
				t.Fatalf("%s and %s share %s", k, other, cs[k])
			}
			used[cs[k]] = k
		}
		// Counted in any order, the groups have the same colours.
		rev := append([]string(nil), set...)
		for a, b := 0, len(rev)-1; a < b; a, b = a+1, b-1 {
			rev[a], rev[b] = rev[b], rev[a]
		}
		for k, c := range colours(rev) {
			if cs[k] != c {
				t.Fatalf("%s is %s, or %s in another order", k, cs[k], c)
			}
		}
	}
	// A group whose colour no other group of the chart takes has its own.
	cs := colours([]string{keys[0]})
	if cs[keys[0]] != colourOf(keys[0]) {
		t.Fatalf("alone, %s is %s, not %s", keys[0], cs[keys[0]], colourOf(keys[0]))
	}
	h := newHistogram()
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var groups []deadletter.Group
	for i, k := range keys[:3] {
		for range 3 - i {
			h.add(k, at)
		}
		groups = append(groups, deadletter.Group{Key: k, Reason: "reason " + k})
	}
	want := colours(keys[:3])
	for _, l := range chart(h, groups).Legend {
		if l.Fill != want[l.Key] {
			t.Fatalf("the legend colours %s %s, not %s", l.Key, l.Fill, want[l.Key])
		}
	}
}
