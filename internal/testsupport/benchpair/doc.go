// Package benchpair runs the benchmarks that compare streamgen with the
// client it is built on. The machine they run on is shared and noisy, so
// the two sides are never measured one after the other: a pair benchmark
// runs rounds of the streamgen side and of the baseline alternately, in
// one run, and reports the median of each side and the median of the
// per-round ratios:
//
//	func BenchmarkDecode(b *testing.B) {
//		benchpair.Run(b, benchpair.Pair{
//			Units: 1000, Unit: "op",
//			Streamgen: func(b *testing.B) time.Duration { ... 1000 decodes ...; return elapsed },
//			Baseline:  func(b *testing.B) time.Duration { ... },
//		})
//	}
//
// Each side returns the time its round of Units units took, so it can leave
// its own setup out (filling a queue, starting an App). The metrics are
// "streamgen-ns/<unit>", "baseline-ns/<unit>" and "ratio": baseline time
// over streamgen time (a throughput ratio: above 1 means streamgen is
// faster), or streamgen time over baseline time when Pair.TimeRatio is set.
//
// A pair whose sides return a Sample (StreamgenSample, BaselineSample; see
// Measure) also reports the client CPU time per unit of each side,
// "streamgen-cpu-ns/<unit>" and "baseline-cpu-ns/<unit>", and "cpu-ratio",
// the median of the per-round ratios of streamgen's CPU time over the
// baseline's (below 1 means streamgen spends less).
//
// A pair whose round is long (a second or more) and whose work comes in
// small pieces (request/reply round trips) sets Interleaved or
// InterleavedSample instead: one call runs a round of both sides, taking
// turns in blocks of a few pieces, so that a load that comes and goes on
// the machine within the round falls on both sides alike.
//
// internal/benchreport turns them into the table make bench prints.
package benchpair
