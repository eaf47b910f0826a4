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
}

// procs is the -GOMAXPROCS suffix go test adds to benchmark names.
var procs = regexp.MustCompile(`-\d+$`)

// Parse reads go test -bench output. Lines that are not results are
// skipped; a benchmark that ran twice keeps its last result.
func Parse(r io.Reader) (*Results, error) {
	res := &Results{Metrics: map[string]map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if cpu, ok := strings.CutPrefix(line, "cpu: "); ok {
			res.CPU = strings.TrimSpace(cpu)
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
		res.Metrics[procs.ReplaceAllString(f[0], "")] = metrics
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return res, nil
}
