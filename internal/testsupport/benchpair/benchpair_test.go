package benchpair

import (
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// work stands for a side's round in these tests: a short sleep, so that a
// testing.Benchmark of a second runs thousands of rounds rather than
// millions, whose figures the pair keeps and sorts.
func work() { time.Sleep(50 * time.Microsecond) }

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := append([]float64(nil), c.in...)
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("Median changed its input: %v became %v", in, c.in)
			}
		}
	}
}

// TestRunAlternatesAndReportsMedians runs a pair whose sides return fixed
// durations and checks the order of the sides and the reported metrics.
func TestRunAlternatesAndReportsMedians(t *testing.T) {
	for _, timeRatio := range []bool{false, true} {
		var order []string
		var res Result
		br := testing.Benchmark(func(b *testing.B) {
			order = order[:0]
			n := 0
			res = Run(b, Pair{
				Units: 10, Unit: "msg", TimeRatio: timeRatio,
				Streamgen: func(*testing.B) time.Duration {
					work()
					order = append(order, "s")
					d := []time.Duration{100, 300, 200}[n%3] * time.Microsecond
					n++
					return d
				},
				Baseline: func(*testing.B) time.Duration {
					work()
					order = append(order, "b")
					return 100 * time.Microsecond
				},
			})
		})
		if res.Rounds < 1 || len(order) != 2*res.Rounds {
			t.Fatalf("%d rounds, sides called %v", res.Rounds, order)
		}
		for i := 0; i+1 < len(order); i += 2 {
			want := "sb"
			if (i/2)%2 == 1 {
				want = "bs"
			}
			if got := order[i] + order[i+1]; got != want {
				t.Fatalf("round %d ran %q, want %q", i/2, got, want)
			}
		}
		if got := br.Extra["baseline-ns/msg"]; got != 10000 {
			t.Errorf("baseline-ns/msg = %v, want 10000", got)
		}
		// Rounds cycle through 100, 300 and 200 µs against 100 µs.
		var sg, want []float64
		for i := range res.Rounds {
			s := []float64{100, 300, 200}[i%3]
			sg = append(sg, s*1000/10)
			if timeRatio {
				want = append(want, s/100)
			} else {
				want = append(want, 100/s)
			}
		}
		if got, m := br.Extra["streamgen-ns/msg"], Median(sg); got != m {
			t.Errorf("streamgen-ns/msg = %v after %d rounds, want %v", got, res.Rounds, m)
		}
		if m := Median(want); res.Ratio != m || br.Extra["ratio"] != m {
			t.Errorf("ratio %v (metric %v) after %d rounds, want %v", res.Ratio, br.Extra["ratio"], res.Rounds, m)
		}
	}
}

func TestOrderJSONSize(t *testing.T) {
	for _, size := range []int{Small, Large} {
		b := OrderJSON(size)
		if len(b) < size || len(b) > size+64 {
			t.Errorf("OrderJSON(%d) is %d bytes", size, len(b))
		}
	}
	if got := SizeName(Large) + " " + SizeName(Small); got != "16KiB 256B" {
		t.Errorf("size names %q", got)
	}
}

// TestGateHoldsEachRound runs a consumer of three rounds of four messages
// through a Gate and checks that no round starts before it is opened.
func TestGateHoldsEachRound(t *testing.T) {
	const batch, rounds = 4, 3
	g := NewGate(batch)
	var handled atomic.Int64
	msgs := make(chan int, batch*rounds)
	for i := range batch * rounds {
		msgs <- i
	}
	close(msgs)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for range msgs {
			g.Begin()
			handled.Add(1)
			g.Done()
		}
	}()
	for r := range rounds {
		// Before Round, the consumer must be held at the round's first message.
		time.Sleep(10 * time.Millisecond)
		if got := handled.Load(); got != int64(r*batch) {
			t.Fatalf("before round %d: %d messages handled, want %d", r, got, r*batch)
		}
		d, err := g.Round(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if d <= 0 {
			t.Errorf("round %d took %v", r, d)
		}
		if got := handled.Load(); got != int64((r+1)*batch) {
			t.Fatalf("after round %d: %d messages handled, want %d", r, got, (r+1)*batch)
		}
	}
	<-finished
}

func TestGateReportsAStalledRound(t *testing.T) {
	g := NewGate(2)
	if _, err := g.Round(20 * time.Millisecond); err == nil {
		t.Error("a round nobody consumed reported no error")
	}
}

func TestMedianInterval(t *testing.T) {
	if lo, hi := MedianInterval(nil); lo != 0 || hi != 0 {
		t.Errorf("empty: %v, %v", lo, hi)
	}
	if lo, hi := MedianInterval([]float64{3, 1, 2}); lo != 1 || hi != 3 {
		t.Errorf("three values: %v, %v; want the range 1, 3", lo, hi)
	}
	// 100 values 1..100: ranks ⌊50 − 9.8⌋ = 40 and ⌈51 + 9.8⌉ = 61.
	xs := make([]float64, 100)
	for i := range xs {
		xs[len(xs)-1-i] = float64(i + 1)
	}
	if lo, hi := MedianInterval(xs); lo != 40 || hi != 61 {
		t.Errorf("1..100: %v, %v; want 40, 61", lo, hi)
	}
	if xs[0] != 100 {
		t.Error("MedianInterval changed its input")
	}
}

// A pair of samples reports each side's CPU time per unit and the median
// of the per-round CPU ratios.
func TestRunReportsCPUTime(t *testing.T) {
	var res Result
	br := testing.Benchmark(func(b *testing.B) {
		n := 0
		res = Run(b, Pair{
			Units: 10, Unit: "msg",
			StreamgenSample: func(*testing.B) Sample {
				work()
				cpu := []time.Duration{150, 450, 300}[n%3] * time.Microsecond
				n++
				return Sample{Time: time.Millisecond, CPU: cpu}
			},
			BaselineSample: func(*testing.B) Sample {
				work()
				return Sample{Time: time.Millisecond, CPU: 150 * time.Microsecond}
			},
		})
	})
	if res.Rounds < 1 {
		t.Fatalf("%d rounds", res.Rounds)
	}
	if got := br.Extra["baseline-cpu-ns/msg"]; got != 15000 {
		t.Errorf("baseline-cpu-ns/msg = %v, want 15000", got)
	}
	var want []float64
	for i := range res.Rounds {
		want = append(want, []float64{1, 3, 2}[i%3])
	}
	if m := Median(want); res.CPURatio != m || br.Extra["cpu-ratio"] != m {
		t.Errorf("cpu-ratio %v (metric %v) after %d rounds, want %v", res.CPURatio, br.Extra["cpu-ratio"], res.Rounds, m)
	}
	if _, ok := br.Extra["streamgen-cpu-ns/msg"]; !ok {
		t.Error("no streamgen-cpu-ns/msg metric")
	}
}

// A pair of plain durations reports no CPU metrics.
func TestRunWithoutCPUReportsNone(t *testing.T) {
	br := testing.Benchmark(func(b *testing.B) {
		Run(b, Pair{Units: 1,
			Streamgen: func(*testing.B) time.Duration { work(); return time.Millisecond },
			Baseline:  func(*testing.B) time.Duration { work(); return time.Millisecond },
		})
	})
	if _, ok := br.Extra["cpu-ratio"]; ok {
		t.Errorf("metrics %v: a pair of durations reports a CPU ratio", br.Extra)
	}
}

// Measure counts the CPU time a busy loop burns. The machine is shared,
// so the loop runs until the process has used 5ms of CPU time, not for a
// fixed time.
func TestMeasureCountsCPUTime(t *testing.T) {
	start := CPUTime()
	deadline := time.Now().Add(10 * time.Second)
	s := Measure(func() {
		for CPUTime()-start < 5*time.Millisecond && time.Now().Before(deadline) {
		}
	})
	if time.Now().After(deadline) {
		t.Fatal("CPUTime did not advance by 5ms in 10s of a busy loop")
	}
	if s.CPU < 4*time.Millisecond || s.Time <= 0 {
		t.Errorf("measured %+v, want about 5ms of CPU time", s)
	}
}

// An interleaved pair runs one call per round (after its warmup calls),
// never the sides' own functions, and reports each side's medians and
// the median ratio of what its rounds returned.
func TestRunInterleaved(t *testing.T) {
	for _, withCPU := range []bool{false, true} {
		var res Result
		calls := 0
		br := testing.Benchmark(func(b *testing.B) {
			calls = 0
			n := 0
			round := func() (sg, base Sample) {
				work()
				calls++
				sg = Sample{Time: []time.Duration{100, 300, 200}[n%3] * time.Microsecond, CPU: []time.Duration{50, 150, 100}[n%3] * time.Microsecond}
				n++
				return sg, Sample{Time: 100 * time.Microsecond, CPU: 50 * time.Microsecond}
			}
			p := Pair{
				Units: 10, Unit: "msg", Warmup: 2,
				Streamgen: func(*testing.B) time.Duration { t.Error("a side ran alone"); return 1 },
				Baseline:  func(*testing.B) time.Duration { t.Error("a side ran alone"); return 1 },
			}
			if withCPU {
				p.InterleavedSample = func(*testing.B) (Sample, Sample) { return round() }
			} else {
				p.Interleaved = func(*testing.B) (time.Duration, time.Duration) {
					s, r := round()
					return s.Time, r.Time
				}
			}
			res = Run(b, p)
		})
		if res.Rounds < 1 || calls != res.Rounds+2 {
			t.Fatalf("%d rounds, %d calls; want a call a round and 2 to warm up", res.Rounds, calls)
		}
		if got := br.Extra["baseline-ns/msg"]; got != 10000 {
			t.Errorf("baseline-ns/msg = %v, want 10000", got)
		}
		// The warmup took the first two values of the cycle.
		var ratios, cpu []float64
		for i := range res.Rounds {
			s := []float64{100, 300, 200}[(i+2)%3]
			ratios = append(ratios, 100/s)
			cpu = append(cpu, s/100)
		}
		if m := Median(ratios); res.Ratio != m {
			t.Errorf("ratio %v after %d rounds, want %v", res.Ratio, res.Rounds, m)
		}
		_, reported := br.Extra["cpu-ratio"]
		if reported != withCPU {
			t.Errorf("cpu-ratio reported: %v, want %v", reported, withCPU)
		}
		if m := Median(cpu); withCPU && res.CPURatio != m {
			t.Errorf("cpu ratio %v after %d rounds, want %v", res.CPURatio, res.Rounds, m)
		}
	}
}
