package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Machine describes where the benchmarks ran.
type Machine struct {
	CPU    string
	CPUs   int
	Go     string
	Broker string
}

// Row is a case as the table shows it.
type Row struct {
	Case                       Case
	Streamgen, Baseline, Ratio string
	// CPU is the client CPU time per message of each side and their
	// ratio, or "—" when the case measured none.
	CPU         string
	Target, Met string
	// Ran is false when the input holds no result of the case.
	Ran bool
}

// Write writes the machine line and the table of cases to w, and returns
// how many cases the results lack.
func Write(w io.Writer, m Machine, res *Results, cases []Case) int {
	cpu := m.CPU
	if cpu == "" {
		cpu = "unknown CPU"
	}
	fmt.Fprintf(w, "Machine: %s, %d CPUs, %s, %s\n\n", cpu, m.CPUs, m.Go, m.Broker)
	fmt.Fprintln(w, "| case | streamgen | baseline | ratio (95% CI) | client CPU µs/msg: streamgen / baseline (ratio) | target | met? |")
	fmt.Fprintln(w, "|---|---:|---:|---|---|---|---|")
	missing := 0
	for _, c := range cases {
		r := MakeRow(c, caseMetrics(res, c))
		if !r.Ran {
			missing++
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", c.Label, r.Streamgen, r.Baseline, r.Ratio, r.CPU, r.Target, r.Met)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Each figure is the median of its side over the rounds; the two sides alternate, round by round, in one run.")
	fmt.Fprintln(w, "The ratio is the median of the per-round ratios (throughput: streamgen over baseline; generator: time over load time),")
	fmt.Fprintln(w, "so it need not equal the ratio of the two medians. \"within noise\": the ratio misses the target, its 95% interval reaches it.")
	fmt.Fprintln(w, "Client CPU is this process's user and system time over a round, per message; its ratio is the median of the per-round ratios.")
	fmt.Fprintln(w, "Against pyzmq, the baseline's client CPU is the Python process's, libzmq's threads included.")
	fmt.Fprintln(w, "Allocation rows are allocs/op, rounded down as go test prints them; their baseline is what the work must allocate (another benchmark, or what the value holds).")
	return missing
}

// caseMetrics returns the metrics of case c: its benchmark's, and for an
// Allocs case that AllocBaselines gives a baseline, that benchmark's
// allocs/op as baseline-allocs/op (absent when it did not run).
func caseMetrics(res *Results, c Case) map[string]float64 {
	m := res.Lookup(c.Bench)
	base, ok := AllocBaselines[c.Bench]
	if c.Kind != Allocs || !ok || m == nil {
		return m
	}
	merged := map[string]float64{}
	for unit, v := range m {
		merged[unit] = v
	}
	delete(merged, "baseline-allocs/op")
	if v, ok := res.Lookup(base)["allocs/op"]; ok {
		merged["baseline-allocs/op"] = v
	} else {
		merged["baseline-allocs/op"] = -1 // named, not run
	}
	return merged
}

// allocsRow renders an Allocs case.
func allocsRow(r Row, metrics map[string]float64) Row {
	c := r.Case
	r.Ratio = "—"
	got, ok := metrics["allocs/op"]
	base, okBase := metrics["baseline-allocs/op"]
	if !okBase {
		base, okBase = metrics["needed-allocs/op"]
	}
	switch {
	case okBase:
		r.Target = fmt.Sprintf("≤ baseline + %g allocs/op", c.Target)
	default:
		r.Target = fmt.Sprintf("≤ %g allocs/op", c.Target)
	}
	if !ok || (okBase && base < 0) {
		r.Streamgen, r.Baseline, r.Met = "—", "—", "not run"
		return r
	}
	r.Ran = true
	r.Streamgen, r.Baseline = fmt.Sprintf("%g allocs/op", got), "—"
	if okBase {
		r.Baseline = fmt.Sprintf("%g allocs/op", base)
	} else {
		base = 0
	}
	r.Met = verdict(got <= base+c.Target, false)
	return r
}

// MakeRow renders the metrics of case c.
func MakeRow(c Case, metrics map[string]float64) Row {
	r := Row{Case: c, CPU: "—"}
	if c.Kind == Allocs {
		return allocsRow(r, metrics)
	}
	if c.Kind == Memory {
		r.Target = fmt.Sprintf("growth < %g%%", c.Target)
		warm, okWarm := metrics["heap-warm-B"]
		end, okEnd := metrics["heap-end-B"]
		growth, okGrowth := metrics["growth-%"]
		if !okWarm || !okEnd || !okGrowth {
			r.Streamgen, r.Baseline, r.Ratio, r.Met = "—", "—", "—", "not run"
			return r
		}
		r.Ran = true
		warmName, endName := "after warm-up", "end"
		if names, ok := MemoryReadings[c.Bench]; ok {
			warmName, endName = names[0], names[1]
		}
		r.Streamgen = endName + " " + mebibytes(end)
		r.Baseline = warmName + " " + mebibytes(warm)
		r.Ratio = fmt.Sprintf("%+.1f%%", growth)
		if perMsg, ok := metrics["growth-B/msg"]; ok {
			r.Ratio += fmt.Sprintf(" (%+.2f B/msg)", perMsg)
		}
		r.Met = verdict(growth < c.Target, false)
		return r
	}

	var sg, base float64
	var okSG, okBase bool
	for unit, v := range metrics {
		switch {
		case strings.HasPrefix(unit, "streamgen-ns/"):
			sg, okSG = v, true
		case strings.HasPrefix(unit, "baseline-ns/"):
			base, okBase = v, true
		}
	}
	ratio, okRatio := metrics["ratio"]
	switch c.Kind {
	case Duration:
		r.Target = fmt.Sprintf("≤ %.2f", c.Target)
	case Rate:
		r.Target = "≥ " + thousands(int64(c.Target)) + " msg/s"
	default:
		r.Target = fmt.Sprintf("≥ %.2f", c.Target)
	}
	if !okSG || !okBase || !okRatio {
		r.Streamgen, r.Baseline, r.Ratio, r.Met = "—", "—", "—", "not run"
		return r
	}
	r.Ran = true
	switch c.Kind {
	case Throughput, Rate:
		r.Streamgen, r.Baseline = perSecond(sg), perSecond(base)
	default:
		r.Streamgen, r.Baseline = duration(sg), duration(base)
	}
	low, okLow := metrics["ratio-low"]
	high, okHigh := metrics["ratio-high"]
	r.Ratio = fmt.Sprintf("%.3f", ratio)
	if okLow && okHigh {
		r.Ratio += fmt.Sprintf(" (%.3f–%.3f)", low, high)
	}
	switch c.Kind {
	case Duration:
		r.Met = verdict(ratio <= c.Target, okLow && low <= c.Target)
	case Rate:
		r.Met = verdict(sg > 0 && 1e9/sg >= c.Target, false)
	default:
		r.Met = verdict(ratio >= c.Target, okHigh && high >= c.Target)
	}
	sgCPU, okSGCPU := metrics["streamgen-cpu-ns/msg"]
	baseCPU, okBaseCPU := metrics["baseline-cpu-ns/msg"]
	cpuRatio, okCPURatio := metrics["cpu-ratio"]
	if okSGCPU && okBaseCPU && okCPURatio {
		r.CPU = fmt.Sprintf("%.1f / %.1f (%.2f)", sgCPU/1000, baseCPU/1000, cpuRatio)
	}
	if target := CPUTargets[c.Bench]; target > 0 {
		r.Target += fmt.Sprintf(", CPU ≤ %.2f", target)
		switch {
		case !okCPURatio:
			r.Met = "no CPU figure"
		case cpuRatio > target && r.Met == "yes":
			r.Met = "no (CPU)"
		case cpuRatio > target:
			r.Met += " (CPU missed too)"
		}
	}
	return r
}

// verdict says whether a target is met, or missed by no more than the
// confidence interval allows.
func verdict(met, withinInterval bool) string {
	switch {
	case met:
		return "yes"
	case withinInterval:
		return "within noise"
	}
	return "no"
}

// perSecond writes a time per message as messages per second.
func perSecond(ns float64) string {
	if ns <= 0 {
		return "—"
	}
	return thousands(int64(math.Round(1e9/ns))) + " msg/s"
}

// duration writes nanoseconds with three significant digits.
func duration(ns float64) string {
	d := time.Duration(math.Round(ns))
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3g s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3g ms", float64(d)/float64(time.Millisecond))
	case d >= time.Microsecond:
		return fmt.Sprintf("%.3g µs", float64(d)/float64(time.Microsecond))
	}
	return fmt.Sprintf("%d ns", d.Nanoseconds())
}

func mebibytes(b float64) string { return fmt.Sprintf("%.2f MiB", b/(1<<20)) }

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
