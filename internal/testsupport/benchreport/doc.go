// Command benchreport prints the table of make bench: it reads the output
// of go test -bench (standard input, or the files named as arguments),
// picks the benchmarks that compare streamgen with the client it is built
// on, and writes one Markdown row per case: the streamgen figure, the
// baseline figure, their ratio with its 95% confidence interval, the
// client CPU time per message of both sides when measured, the target,
// and whether it is met.
//
//	go test -run '^$' -bench . -benchtime 20x ./runtime/rabbitmq | go run ./internal/testsupport/benchreport
//
// The pair benchmarks report streamgen-ns/<unit>, baseline-ns/<unit>,
// ratio, ratio-low and ratio-high, and those that measure CPU time also
// streamgen-cpu-ns/msg, baseline-cpu-ns/msg and cpu-ratio (see
// internal/benchpair); a case in CPUTargets is met only when its CPU ratio
// is within its target too. The memory
// benchmarks report heap-warm-B, heap-end-B, growth-% and growth-B/msg;
// they have one name in two packages (runtime/zeromq, runtime/rabbitmq),
// which the pkg: line go test prints before each package's results tells
// apart.
// The allocation benchmarks report allocs/op (b.ReportAllocs), and
// needed-allocs/op where the value they make holds allocations of its own;
// an Allocs case is met when its allocs/op are at most its target over its
// baseline (a benchmark AllocBaselines names, or needed-allocs/op, or 0).
// Allocation counts are checked here rather than in tests, because
// sync.Pool drops items at random under -race.
// A case is met when its ratio meets the target; when it does not, but
// the confidence interval reaches the target, it is "within noise". A
// case missing from the input is listed as not run, and the command then
// exits with status 1.
//
// The machine line names the CPU (from go test's cpu: line), the number of
// CPUs, the Go version and the RabbitMQ version, which it asks the broker
// at STREAMGEN_RABBITMQ_URL (or the -rabbitmq flag) for.
package main
