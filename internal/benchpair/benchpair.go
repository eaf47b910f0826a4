package benchpair

import (
	"math"
	"slices"
	"testing"
	"time"
)

// Pair describes a pair benchmark: the two sides and how much work a round
// of each does.
type Pair struct {
	// Units is the number of units (messages, operations) one round of
	// each side handles; the figures are per unit.
	Units int
	// Unit names a unit in the metric names: "msg" or "op".
	Unit string
	// Streamgen and Baseline each run one round and return the time its
	// Units units took, setup left out. They fail b themselves.
	Streamgen, Baseline func(b *testing.B) time.Duration
	// Warmup is how many rounds of each side run before the measured
	// ones, unreported.
	Warmup int
	// TimeRatio reports streamgen time over baseline time (lower is
	// better) instead of baseline time over streamgen time.
	TimeRatio bool
}

// Result is what Run measured.
type Result struct {
	// Streamgen and Baseline are the medians of each side's per-unit time.
	Streamgen, Baseline time.Duration
	// Ratio is the median of the per-round ratios; RatioLow and RatioHigh
	// bound it with about 95% confidence (see MedianInterval).
	Ratio, RatioLow, RatioHigh float64
	// Rounds is how many rounds of each side ran.
	Rounds int
}

// Run runs one round of each side per benchmark iteration, the streamgen
// side first in even rounds and the baseline first in odd ones, and
// reports the medians. Use -benchtime=Nx to choose the number of rounds.
func Run(b *testing.B, p Pair) Result {
	b.Helper()
	if p.Units < 1 {
		b.Fatal("benchpair: Units must be at least 1")
	}
	for range p.Warmup {
		p.Streamgen(b)
		p.Baseline(b)
	}
	var sg, base, ratios []float64
	round := 0
	for b.Loop() {
		var s, r time.Duration
		if round%2 == 0 {
			s = p.Streamgen(b)
			r = p.Baseline(b)
		} else {
			r = p.Baseline(b)
			s = p.Streamgen(b)
		}
		round++
		if s <= 0 || r <= 0 {
			b.Fatalf("benchpair: a round took no time (streamgen %v, baseline %v)", s, r)
		}
		sg = append(sg, float64(s)/float64(p.Units))
		base = append(base, float64(r)/float64(p.Units))
		ratios = append(ratios, ratio(s, r, p.TimeRatio))
		if testing.Verbose() {
			b.Logf("round %d: streamgen %.0f ns/%s, baseline %.0f ns/%s, ratio %.3f", round, sg[len(sg)-1], p.unit(), base[len(base)-1], p.unit(), ratios[len(ratios)-1])
		}
	}
	// Each list is sorted once, in place: nothing reads it in round order
	// any more.
	slices.Sort(sg)
	slices.Sort(base)
	slices.Sort(ratios)
	sgMedian, baseMedian := sortedMedian(sg), sortedMedian(base)
	res := Result{
		Streamgen: time.Duration(sgMedian),
		Baseline:  time.Duration(baseMedian),
		Ratio:     sortedMedian(ratios),
		Rounds:    round,
	}
	res.RatioLow, res.RatioHigh = sortedMedianInterval(ratios)
	unit := p.unit()
	b.ReportMetric(sgMedian, "streamgen-ns/"+unit)
	b.ReportMetric(baseMedian, "baseline-ns/"+unit)
	b.ReportMetric(res.Ratio, "ratio")
	b.ReportMetric(res.RatioLow, "ratio-low")
	b.ReportMetric(res.RatioHigh, "ratio-high")
	return res
}

func (p Pair) unit() string {
	if p.Unit == "" {
		return "op"
	}
	return p.Unit
}

func ratio(streamgen, baseline time.Duration, timeRatio bool) float64 {
	if timeRatio {
		return float64(streamgen) / float64(baseline)
	}
	return float64(baseline) / float64(streamgen)
}

// Median returns the median of xs, the mean of the middle two when their
// number is even, or 0 when there are none. xs is not changed.
func Median(xs []float64) float64 {
	return sortedMedian(slices.Sorted(slices.Values(xs)))
}

// sortedMedian is Median of s, which is sorted.
func sortedMedian(s []float64) float64 {
	if len(s) == 0 {
		return 0
	}
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MedianInterval returns a distribution-free interval that holds the
// median of the population xs were drawn from with about 95% confidence:
// the order statistics of 1-based ranks ⌊n/2 − 0.98·√n⌋ and
// ⌈1 + n/2 + 0.98·√n⌉ (1.96 standard deviations of a binomial count around
// n/2), clamped to the values there are. xs is not changed.
func MedianInterval(xs []float64) (low, high float64) {
	return sortedMedianInterval(slices.Sorted(slices.Values(xs)))
}

// sortedMedianInterval is MedianInterval of s, which is sorted.
func sortedMedianInterval(s []float64) (low, high float64) {
	if len(s) == 0 {
		return 0, 0
	}
	n := float64(len(s))
	d := 0.98 * math.Sqrt(n)
	j := int(math.Floor(n/2 - d))
	k := int(math.Ceil(1 + n/2 + d))
	return s[max(j, 1)-1], s[min(k, len(s))-1]
}
