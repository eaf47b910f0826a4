package console

import (
	"testing"
	"time"
)

// However far apart the park times, the chart has at most maxBuckets
// buckets, and every letter is counted in the bucket of its time.
func TestHistogramWidensAndKeepsEveryLetter(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, step := range []time.Duration{time.Second, time.Minute, 17 * time.Minute, 5 * time.Hour, 9 * 24 * time.Hour} {
		h := newHistogram()
		const n = 1000
		for i := range n {
			h.add([]string{"a", "b", "c"}[i%3], start.Add(time.Duration(i)*step))
		}
		h.add("a", time.Time{})
		starts, series := h.result(2)
		if len(starts) > maxBuckets || len(starts) == 0 {
			t.Fatalf("step %v: %d buckets", step, len(starts))
		}
		total := 0
		for _, s := range series {
			for _, c := range s.Counts {
				total += c
			}
		}
		if total != n || h.undated != 1 || len(series) != 3 || series[2].Key != otherKey {
			t.Fatalf("step %v: %d letters counted, %d undated, series %+v", step, total, h.undated, series)
		}
		w := widths[h.width]
		last := start.Add((n - 1) * step)
		if end := starts[len(starts)-1]; last.Before(end) || !last.Before(end.Add(w)) {
			t.Fatalf("step %v: the last letter, at %v, is not in the last bucket, from %v (width %v)", step, last, end, w)
		}
	}
}

// Groups beyond maxSeries are counted as other letters: memory stays
// bounded whatever the number of groups.
func TestHistogramBoundsItsSeries(t *testing.T) {
	h := newHistogram()
	for i := range 10 * maxSeries {
		h.add(string(rune('A'+i)), time.Unix(1_700_000_000+int64(i), 0))
	}
	if len(h.series) > maxSeries+1 {
		t.Fatalf("%d series kept", len(h.series))
	}
	_, series := h.result(6)
	total := 0
	for _, s := range series {
		total += s.Total
	}
	if len(series) != 7 || total != 10*maxSeries {
		t.Fatalf("%d series, %d letters", len(series), total)
	}
}
