package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Results are the benchmarks read from go test -bench output.
type Results struct {
	// CPU is the processor go test names on its cpu: line.
	CPU string
	// Metrics holds the metrics of each benchmark by name, without the
	// -GOMAXPROCS suffix: unit → value.
	Metrics map[string]map[string]float64
	// Packages holds the same by the import path of the package that ran
	// them, as go test names it on the pkg: line before its results ("" for
	// results before any pkg: line): path → name → unit → value.
	Packages map[string]map[string]map[string]float64
}

// Lookup returns the metrics of bench, a Case's Bench: a benchmark's name,
// whose last result in any package it returns, or a package's path, a
// colon and a benchmark's name (runtime/zeromq:BenchmarkWorkerMemory),
// for a benchmark of a name that more than one package runs. The path is
// the import path go test prints or its end after a slash; when that end
// names more than one package, Lookup returns nil. It returns nil for a
// benchmark that did not run.
func (r *Results) Lookup(bench string) map[string]float64 {
	pkg, name, qualified := strings.Cut(bench, ":")
	if !qualified || strings.HasPrefix(bench, "Benchmark") { // the colon is a sub-benchmark's
		return r.Metrics[bench]
	}
	if m, ok := r.Packages[pkg]; ok {
		return m[name]
	}
	var found map[string]map[string]float64
	for path, m := range r.Packages {
		if strings.HasSuffix(path, "/"+pkg) {
			if found != nil {
				return nil
			}
			found = m
		}
	}
	return found[name]
}

// procs is the -GOMAXPROCS suffix go test adds to benchmark names.
var procs = regexp.MustCompile(`-\d+$`)

// Parse reads go test -bench output. Lines that are not results are
// skipped; a benchmark that ran twice keeps its last result.
func Parse(r io.Reader) (*Results, error) {
	res := &Results{Metrics: map[string]map[string]float64{}, Packages: map[string]map[string]map[string]float64{}}
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if cpu, ok := strings.CutPrefix(line, "cpu: "); ok {
			res.CPU = strings.TrimSpace(cpu)
			continue
		}
		if path, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(path)
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		// name, iterations, then value-unit pairs.
		if len(f) < 4 || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		metrics := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%q: metric %s: %w", line, f[i+1], err)
			}
			metrics[f[i+1]] = v
		}
		name := procs.ReplaceAllString(f[0], "")
		res.Metrics[name] = metrics
		if res.Packages[pkg] == nil {
			res.Packages[pkg] = map[string]map[string]float64{}
		}
		res.Packages[pkg][name] = metrics
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return res, nil
}
