package benchpair

import (
	"fmt"
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
	// StreamgenSample and BaselineSample, when set, run a round instead
	// of Streamgen and Baseline, and also return the client CPU time the
	// round cost (see CPUTime); Run then reports it per unit too.
	StreamgenSample, BaselineSample func(b *testing.B) Sample
	// Interleaved and InterleavedSample, when set, run one round of both
	// sides at once instead of the above: the caller interleaves them in
	// blocks of a few units, so that a load that comes and goes on the
	// machine within a round falls on both sides alike rather than on the
	// side whose turn it was. They return what each side's Units took
	// (InterleavedSample: and its CPU time), block times summed.
	Interleaved       func(b *testing.B) (streamgen, baseline time.Duration)
	InterleavedSample func(b *testing.B) (streamgen, baseline Sample)
	// Warmup is how many rounds of each side run before the measured
	// ones, unreported.
	Warmup int
	// TimeRatio reports streamgen time over baseline time (lower is
	// better) instead of baseline time over streamgen time.
	TimeRatio bool
}

// Sample is what one round of one side measured: the time its Units took
// and the CPU time this process spent on them.
type Sample struct {
	Time, CPU time.Duration
}

// Result is what Run measured.
type Result struct {
	// Streamgen and Baseline are the medians of each side's per-unit time.
	Streamgen, Baseline time.Duration
	// StreamgenCPU and BaselineCPU are the medians of each side's per-unit
	// CPU time, and CPURatio the median of the per-round ratios of
	// streamgen's CPU time over the baseline's; all 0 unless the pair
	// measured CPU time.
	StreamgenCPU, BaselineCPU time.Duration
	CPURatio                  float64
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
	both, cpu := p.rounds(b)
	for i := range p.Warmup {
		both(b, i)
	}
	var sg, base, ratios, sgCPU, baseCPU, cpuRatios []float64
	round := 0
	for b.Loop() {
		s, r := both(b, round)
		round++
		if s.Time <= 0 || r.Time <= 0 {
			b.Fatalf("benchpair: a round took no time (streamgen %v, baseline %v)", s.Time, r.Time)
		}
		sg = append(sg, float64(s.Time)/float64(p.Units))
		base = append(base, float64(r.Time)/float64(p.Units))
		ratios = append(ratios, ratio(s.Time, r.Time, p.TimeRatio))
		if cpu {
			sgCPU = append(sgCPU, float64(s.CPU)/float64(p.Units))
			baseCPU = append(baseCPU, float64(r.CPU)/float64(p.Units))
			cpuRatios = append(cpuRatios, float64(max(s.CPU, 1))/float64(max(r.CPU, 1)))
		}
		if testing.Verbose() {
			line := fmt.Sprintf("round %d: streamgen %.0f ns/%s, baseline %.0f ns/%s, ratio %.3f", round, sg[len(sg)-1], p.unit(), base[len(base)-1], p.unit(), ratios[len(ratios)-1])
			if cpu {
				line += fmt.Sprintf("; CPU streamgen %.0f ns/%s, baseline %.0f ns/%s", sgCPU[len(sgCPU)-1], p.unit(), baseCPU[len(baseCPU)-1], p.unit())
			}
			b.Log(line)
		}
	}
	// Each list is sorted once, in place: nothing reads it in round order
	// any more.
	for _, xs := range [][]float64{sg, base, ratios, sgCPU, baseCPU, cpuRatios} {
		slices.Sort(xs)
	}
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
	if cpu {
		res.StreamgenCPU = time.Duration(sortedMedian(sgCPU))
		res.BaselineCPU = time.Duration(sortedMedian(baseCPU))
		res.CPURatio = sortedMedian(cpuRatios)
		b.ReportMetric(sortedMedian(sgCPU), "streamgen-cpu-ns/"+unit)
		b.ReportMetric(sortedMedian(baseCPU), "baseline-cpu-ns/"+unit)
		b.ReportMetric(res.CPURatio, "cpu-ratio")
	}
	return res
}

// rounds returns a round of both sides, the streamgen side first in even
// rounds and the baseline first in odd ones unless they are interleaved,
// and whether they measure CPU time.
func (p Pair) rounds(b *testing.B) (both func(b *testing.B, round int) (sg, base Sample), cpu bool) {
	timed := func(f func(*testing.B) time.Duration) func(*testing.B) Sample {
		return func(b *testing.B) Sample { return Sample{Time: f(b)} }
	}
	alternate := func(sg, base func(*testing.B) Sample) func(*testing.B, int) (Sample, Sample) {
		return func(b *testing.B, round int) (s, r Sample) {
			if round%2 == 0 {
				s = sg(b)
				return s, base(b)
			}
			r = base(b)
			return sg(b), r
		}
	}
	switch {
	case p.InterleavedSample != nil:
		return func(b *testing.B, _ int) (Sample, Sample) { return p.InterleavedSample(b) }, true
	case p.Interleaved != nil:
		return func(b *testing.B, _ int) (Sample, Sample) {
			s, r := p.Interleaved(b)
			return Sample{Time: s}, Sample{Time: r}
		}, false
	case p.StreamgenSample != nil && p.BaselineSample != nil:
		return alternate(p.StreamgenSample, p.BaselineSample), true
	case p.Streamgen != nil && p.Baseline != nil:
		return alternate(timed(p.Streamgen), timed(p.Baseline)), false
	}
	b.Fatal("benchpair: set Streamgen and Baseline, StreamgenSample and BaselineSample, or Interleaved or InterleavedSample")
	return nil, false
}

// Measure runs f and returns its wall-clock time and the CPU time this
// process spent meanwhile (see CPUTime).
func Measure(f func()) Sample {
	cpu := CPUTime()
	start := time.Now()
	f()
	return Sample{Time: time.Since(start), CPU: CPUTime() - cpu}
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
