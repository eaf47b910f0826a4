package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const sample = `goos: linux
goarch: amd64
pkg: github.com/streamgen/streamgen/runtime/rabbitmq
cpu: AMD EPYC
BenchmarkConsume/payload=256B/prefetch=50/concurrency=1
    bench_test.go:181: round 1: streamgen 25872 ns/msg, baseline 26509 ns/msg, ratio 1.025
BenchmarkConsume/payload=256B/prefetch=50/concurrency=1-2   	      30	  79604653 ns/op	     20000 baseline-ns/msg	         0.8 ratio	0.7 ratio-low	0.95 ratio-high	     25000 streamgen-ns/msg	12000 streamgen-cpu-ns/msg	10000 baseline-cpu-ns/msg	1.2 cpu-ratio
BenchmarkRetry/prefetch=50/concurrency=1-2   	      10	 595907223 ns/op	    500000 baseline-ns/msg	         1.0 ratio	0.9 ratio-low	1.1 ratio-high	     500000 streamgen-ns/msg
PASS
ok  	github.com/streamgen/streamgen/runtime/rabbitmq	12.345s
goos: linux
goarch: amd64
pkg: github.com/streamgen/streamgen/runtime/zeromq
cpu: AMD EPYC
BenchmarkWorkerMemory-2                   	       1	 691415847 ns/op	        12.5 growth-%	    287008 heap-end-B	    255304 heap-warm-B	0.31 growth-B/msg
--- BENCH: BenchmarkWorkerMemory-2
    benchmark_test.go:370: 100000 messages after a warm-up of 100000: live heap 0.24 MiB, then 0.27 MiB
PASS
ok  	github.com/streamgen/streamgen/runtime/zeromq	3.210s
goos: linux
goarch: amd64
pkg: github.com/streamgen/streamgen/runtime/rabbitmq
cpu: AMD EPYC
BenchmarkWorkerMemory-2                   	       1	18035621739 ns/op	         1.8 growth-%	         0.06 growth-B/msg	    349424 heap-end-B	    343240 heap-warm-B
PASS
ok  	github.com/streamgen/streamgen/runtime/rabbitmq	32.235s
goos: linux
goarch: amd64
pkg: github.com/streamgen/streamgen/runtime
cpu: AMD EPYC
BenchmarkDecode/payload=256B-2         	     100	  11856426 ns/op	      2982 baseline-ns/op	         0.5 ratio	0.4 ratio-low	0.6 ratio-high	      5964 streamgen-ns/op
PASS
goos: linux
goarch: amd64
pkg: github.com/streamgen/streamgen/generator
cpu: AMD EPYC
BenchmarkGenerateVsLoad/handlers=1000-2       	       3	 312869879 ns/op	 120000000 streamgen-ns/op	  100000000 baseline-ns/op	         1.2 ratio	1.1 ratio-low	1.3 ratio-high
PASS
`

// sampleRuns is how many of the Cases sample has results of.
const sampleRuns = 6

func TestParse(t *testing.T) {
	res, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if res.CPU != "AMD EPYC" {
		t.Errorf("cpu %q", res.CPU)
	}
	m := res.Metrics["BenchmarkConsume/payload=256B/prefetch=50/concurrency=1"]
	if m["streamgen-ns/msg"] != 25000 || m["baseline-ns/msg"] != 20000 || m["ratio"] != 0.8 {
		t.Errorf("consume metrics %v", m)
	}
	if len(res.Metrics) != 5 {
		t.Errorf("%d benchmarks parsed, want 5: %v", len(res.Metrics), res.Metrics)
	}
	if m := res.Metrics["BenchmarkWorkerMemory"]; m["heap-end-B"] != 349424 {
		t.Errorf("BenchmarkWorkerMemory by name: %v, want the last result, RabbitMQ's", m)
	}
	perPackage := map[string]int{}
	for path, m := range res.Packages {
		perPackage[path] = len(m)
	}
	const module = "github.com/streamgen/streamgen/"
	want := map[string]int{module + "runtime/rabbitmq": 3, module + "runtime/zeromq": 1, module + "runtime": 1, module + "generator": 1}
	if len(perPackage) != len(want) {
		t.Errorf("benchmarks by package %v, want %v", perPackage, want)
	}
	for path, n := range want {
		if perPackage[path] != n {
			t.Errorf("benchmarks by package %v, want %v", perPackage, want)
			break
		}
	}
}

// A benchmark of a name two packages run is told apart by its package;
// one that only one package runs is found by its name alone.
func TestLookupByPackage(t *testing.T) {
	res, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	for bench, end := range map[string]float64{
		"runtime/zeromq:BenchmarkWorkerMemory":                                  287008,
		"github.com/streamgen/streamgen/runtime/zeromq:BenchmarkWorkerMemory":   287008,
		"runtime/rabbitmq:BenchmarkWorkerMemory":                                349424,
		"rabbitmq:BenchmarkWorkerMemory":                                        349424,
		"github.com/streamgen/streamgen/runtime/rabbitmq:BenchmarkWorkerMemory": 349424,
		"bitmq:BenchmarkWorkerMemory":                                           0, // not a whole path element
		"runtime/amqp:BenchmarkWorkerMemory":                                    0,
		"runtime:BenchmarkWorkerMemory":                                         0, // runtime ran no such benchmark
		"BenchmarkMissing":                                                      0,
	} {
		m := res.Lookup(bench)
		if m["heap-end-B"] != end || (end == 0) != (m == nil) {
			t.Errorf("Lookup(%q) = %v, want heap-end-B %v", bench, m, end)
		}
	}
	if m := res.Lookup("runtime:BenchmarkDecode/payload=256B"); m["streamgen-ns/op"] != 5964 {
		t.Errorf("runtime:BenchmarkDecode/payload=256B: %v", m)
	}
	if m := res.Lookup("BenchmarkDecode/payload=256B"); m["streamgen-ns/op"] != 5964 {
		t.Errorf("BenchmarkDecode/payload=256B: %v", m)
	}

	// Two packages whose paths end alike: the end names neither.
	twice, err := Parse(strings.NewReader("pkg: a/runtime/zeromq\nBenchmarkWorkerMemory-2 1 1 ns/op 1 growth-%\npkg: b/runtime/zeromq\nBenchmarkWorkerMemory-2 1 1 ns/op 2 growth-%\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m := twice.Lookup("runtime/zeromq:BenchmarkWorkerMemory"); m != nil {
		t.Errorf("runtime/zeromq names two packages, Lookup returned %v", m)
	}
	if m := twice.Lookup("b/runtime/zeromq:BenchmarkWorkerMemory"); m["growth-%"] != 2 {
		t.Errorf("b/runtime/zeromq: %v", m)
	}
}

// Every case named by its package names a package of the module.
func TestCasePackagesExist(t *testing.T) {
	for _, c := range Cases {
		pkg, _, qualified := strings.Cut(c.Bench, ":")
		if !qualified || strings.HasPrefix(c.Bench, "Benchmark") {
			continue
		}
		if _, err := os.Stat(filepath.Join("..", "..", "..", filepath.FromSlash(pkg))); err != nil {
			t.Errorf("%s: %v", c.Label, err)
		}
	}
}

func TestRows(t *testing.T) {
	res, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		c                          Case
		streamgen, baseline, ratio string
		met                        string
	}{
		{Case{"BenchmarkConsume/payload=256B/prefetch=50/concurrency=1", "consume", Throughput, 0.9}, "40,000 msg/s", "50,000 msg/s", "0.800 (0.700–0.950)", "within noise (CPU missed too)"},
		{Case{"BenchmarkConsume/payload=256B/prefetch=50/concurrency=1", "consume", Throughput, 0.75}, "40,000 msg/s", "50,000 msg/s", "0.800 (0.700–0.950)", "no (CPU)"},
		{Case{"BenchmarkRetry/prefetch=50/concurrency=1", "retry", Throughput, 0.8}, "2,000 msg/s", "2,000 msg/s", "1.000 (0.900–1.100)", "yes"},
		{Case{"BenchmarkDecode/payload=256B", "decode", Speed, 1.0}, "5.96 µs", "2.98 µs", "0.500 (0.400–0.600)", "no"},
		{Case{"BenchmarkGenerateVsLoad/handlers=1000", "generate", Duration, 1.5}, "120 ms", "100 ms", "1.200 (1.100–1.300)", "yes"},
		{Case{"BenchmarkGenerateVsLoad/handlers=1000", "generate", Duration, 1.15}, "120 ms", "100 ms", "1.200 (1.100–1.300)", "within noise"},
		{Case{"BenchmarkGenerateVsLoad/handlers=1000", "generate", Duration, 1.05}, "120 ms", "100 ms", "1.200 (1.100–1.300)", "no"},
		{Case{"runtime/zeromq:BenchmarkWorkerMemory", "memory", Memory, 10}, "end 0.27 MiB", "after warm-up 0.24 MiB", "+12.5% (+0.31 B/msg)", "no"},
		{Case{"runtime/rabbitmq:BenchmarkWorkerMemory", "memory", Memory, 10}, "end 0.33 MiB", "after warm-up 0.33 MiB", "+1.8% (+0.06 B/msg)", "yes"},
		{Case{"runtime/amqp:BenchmarkWorkerMemory", "memory", Memory, 10}, "—", "—", "—", "not run"},
		{Case{"BenchmarkMissing", "missing", Throughput, 0.9}, "—", "—", "—", "not run"},
	} {
		r := MakeRow(c.c, res.Lookup(c.c.Bench))
		if r.Streamgen != c.streamgen || r.Baseline != c.baseline || r.Ratio != c.ratio || r.Met != c.met {
			t.Errorf("%s: row %q | %q | %q | %q, want %q | %q | %q | %q", c.c.Label, r.Streamgen, r.Baseline, r.Ratio, r.Met, c.streamgen, c.baseline, c.ratio, c.met)
		}
		if r.Ran != (c.met != "not run") {
			t.Errorf("%s: ran = %v", c.c.Label, r.Ran)
		}
	}
}

func TestWriteCountsMissingCases(t *testing.T) {
	res, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	missing := Write(&out, Machine{CPU: res.CPU, CPUs: 2, Go: "go1.26", Broker: "RabbitMQ 3.10.8"}, res, Cases)
	if want := len(Cases) - sampleRuns; missing != want {
		t.Errorf("%d cases missing, want %d", missing, want)
	}
	text := out.String()
	if !strings.HasPrefix(text, "Machine: AMD EPYC, 2 CPUs, go1.26, RabbitMQ 3.10.8\n") {
		t.Errorf("machine line: %q", strings.SplitN(text, "\n", 2)[0])
	}
	if n := strings.Count(text, "\n| "); n != len(Cases)+1 {
		t.Errorf("%d table lines, want a header and %d rows:\n%s", n, len(Cases), text)
	}
	for _, row := range []string{
		"| Worker live heap, 100,000 msgs, 10% fail once (ZeroMQ loopback) | end 0.27 MiB | after warm-up 0.24 MiB | +12.5% (+0.31 B/msg) |",
		"| Worker live heap, 100,000 msgs, 10% fail once (RabbitMQ) | end 0.33 MiB | after warm-up 0.33 MiB | +1.8% (+0.06 B/msg) |",
	} {
		if !strings.Contains(text, row) {
			t.Errorf("no row %q in\n%s", row, text)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// A case with CPU figures shows them; one with a CPU target is met only
// when both targets are.
func TestRowsShowCPU(t *testing.T) {
	res, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	c := Case{"BenchmarkConsume/payload=256B/prefetch=50/concurrency=1", "consume", Throughput, 0.75}
	r := MakeRow(c, res.Lookup(c.Bench))
	if r.CPU != "12.0 / 10.0 (1.20)" {
		t.Errorf("CPU column %q", r.CPU)
	}
	if r.Target != "≥ 0.75, CPU ≤ 1.10" || r.Met != "no (CPU)" {
		t.Errorf("target %q, met %q: the CPU ratio 1.2 misses 1.1", r.Target, r.Met)
	}
	if r := MakeRow(Case{"BenchmarkRetry/prefetch=50/concurrency=1", "retry", Throughput, 0.8}, res.Metrics["BenchmarkRetry/prefetch=50/concurrency=1"]); r.CPU != "—" {
		t.Errorf("CPU column %q for a case without CPU figures", r.CPU)
	}
}

// A Rate case is met by streamgen's own rate, whatever the ratio; a Memory
// case of MemoryReadings names its readings.
func TestRateRowsAndNamedMemoryReadings(t *testing.T) {
	m := map[string]float64{"streamgen-ns/msg": 40000, "baseline-ns/msg": 20000, "ratio": 0.5, "ratio-low": 0.4, "ratio-high": 0.6,
		"heap-warm-B": 4 << 20, "heap-end-B": 5 << 20, "growth-%": 25}
	for _, c := range []struct {
		c                                Case
		streamgen, baseline, target, met string
	}{
		{Case{"BenchmarkDLQList", "ls", Rate, 20000}, "25,000 msg/s", "50,000 msg/s", "≥ 20,000 msg/s", "yes"},
		{Case{"BenchmarkDLQList", "ls", Rate, 30000}, "25,000 msg/s", "50,000 msg/s", "≥ 30,000 msg/s", "no"},
		{Case{"BenchmarkDLQList", "ls heap", Memory, 50}, "100,000 letters: 5.00 MiB", "50,000 letters: 4.00 MiB", "growth < 50%", "yes"},
	} {
		wantRow(t, c.c.Label, MakeRow(c.c, m), c.streamgen, c.baseline, c.target, c.met)
	}
}

// An Allocs case is met when its allocs/op are within the target over its
// baseline: the benchmark AllocBaselines names, or the benchmark's own
// needed-allocs/op, or none; a case whose baseline did not run is not run.
func TestAllocsRows(t *testing.T) {
	res, err := Parse(strings.NewReader(`pkg: github.com/streamgen/streamgen/runtime
BenchmarkPublishWithoutOptions-2   	    1000	       500 ns/op	     200 B/op	       2 allocs/op
BenchmarkPublishParts-2            	    1000	       400 ns/op	     200 B/op	       2 allocs/op
pkg: github.com/streamgen/streamgen/runtime/rabbitmq
BenchmarkPublishAsyncAllocation-2  	    1000	      3000 ns/op	     900 B/op	       9 allocs/op
pkg: github.com/streamgen/streamgen/runtime/jsondecode
BenchmarkOrderAllocation-2         	    1000	       900 ns/op	     300 B/op	       5 allocs/op	         4 needed-allocs/op
BenchmarkEscapedStringAllocation-2 	    1000	        50 ns/op	      16 B/op	       1 allocs/op
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		c                                Case
		streamgen, baseline, target, met string
	}{
		{Case{"BenchmarkPublishWithoutOptions", "publish", Allocs, 0}, "2 allocs/op", "2 allocs/op", "≤ baseline + 0 allocs/op", "yes"},
		{Case{"BenchmarkOrderAllocation", "order", Allocs, 0}, "5 allocs/op", "4 allocs/op", "≤ baseline + 0 allocs/op", "no"},
		{Case{"BenchmarkOrderAllocation", "order", Allocs, 1}, "5 allocs/op", "4 allocs/op", "≤ baseline + 1 allocs/op", "yes"},
		{Case{"BenchmarkEscapedStringAllocation", "escaped", Allocs, 1}, "1 allocs/op", "—", "≤ 1 allocs/op", "yes"},
		{Case{"BenchmarkEscapedStringAllocation", "escaped", Allocs, 0}, "1 allocs/op", "—", "≤ 0 allocs/op", "no"},
		{Case{"BenchmarkPublishAsyncAllocation", "baseline missing", Allocs, 1}, "—", "—", "≤ baseline + 1 allocs/op", "not run"},
		{Case{"BenchmarkMissing", "missing", Allocs, 0}, "—", "—", "≤ 0 allocs/op", "not run"},
	} {
		r := MakeRow(c.c, caseMetrics(res, c.c))
		wantRow(t, fmt.Sprintf("%s/%g", c.c.Label, c.c.Target), r, c.streamgen, c.baseline, c.target, c.met)
		if r.Ran != (c.met != "not run") {
			t.Errorf("%s: ran = %v", c.c.Label, r.Ran)
		}
	}
	// Every baseline AllocBaselines names is a case's, and a benchmark of
	// its own, not a case.
	cases := map[string]Kind{}
	for _, c := range Cases {
		cases[c.Bench] = c.Kind
	}
	for bench, base := range AllocBaselines {
		if k, ok := cases[bench]; !ok || k != Allocs {
			t.Errorf("AllocBaselines names %s, not an Allocs case", bench)
		}
		if _, ok := cases[base]; ok {
			t.Errorf("the baseline %s is a case of its own", base)
		}
	}
}

// wantRow fails t, naming the row by label, unless r has these columns.
func wantRow(t *testing.T, label string, r Row, streamgen, baseline, target, met string) {
	t.Helper()
	if r.Streamgen != streamgen || r.Baseline != baseline || r.Target != target || r.Met != met {
		t.Errorf("%s: row %q | %q | %q | %q, want %q | %q | %q | %q", label, r.Streamgen, r.Baseline, r.Target, r.Met, streamgen, baseline, target, met)
	}
}
