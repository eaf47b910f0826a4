package generator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/go/packages"

	"github.com/streamgen/streamgen/generator/internal/gentest"
	"github.com/streamgen/streamgen/internal/testsupport/benchpair"
)

// benchSizes are the handler counts of the synthetic packages.
var benchSizes = []int{50, 200, 1000}

// syntheticPackage writes a package with n annotated handlers into a new
// temporary module and returns the module directory; the package is
// ./work. Handlers come four to a subscription, alternating brokers, with
// every shape and a few keys, each with a message type of its own.
func syntheticPackage(b *testing.B, n int) string {
	b.Helper()
	dir := gentest.TempModule(b, "example.com/bench")
	var src strings.Builder
	src.WriteString("package work\n\nimport (\n\t\"context\"\n\n\t\"github.com/streamgen/streamgen/runtime\"\n)\n\nvar _ = runtime.Ack\n")
	for i := range n {
		sub := i / 4
		keys := "broker=rabbitmq max_attempts=3 retry_delay=1s,10s dead_letter=dead" + fmt.Sprint(sub)
		if sub%2 == 1 {
			keys = "broker=zeromq max_attempts=3 out_retry=self prefetch=4"
		}
		ptr, md, res, ret := "", "", "error", "nil"
		if i%2 == 1 {
			ptr = "*"
		}
		if i%3 == 1 {
			md = ", md runtime.Metadata"
		}
		if i%5 == 1 {
			res, ret = "runtime.Outcome", "runtime.Ack()"
		}
		fmt.Fprintf(&src, "\n// M%d is a message.\ntype M%d struct {\n\tID   int    `json:\"id\"`\n\tName string `json:\"name\"`\n\tTags []string\n}\n", i, i)
		fmt.Fprintf(&src, "\n//stream:subscriber \"q%d\" %s\nfunc H%d(ctx context.Context, m %sM%d%s) %s { return %s }\n", sub, keys, i, ptr, i, md, res, ret)
	}
	if err := os.MkdirAll(filepath.Join(dir, "work"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "work", "work.go"), []byte(src.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	// Resolve the module's requirements once, as a user's module has them.
	gentest.RunGo(b, dir, "mod", "tidy")
	return dir
}

// generateOnce generates ./work of dir in memory and returns the package.
func generateOnce(b *testing.B, dir string, n int) *Package {
	b.Helper()
	pkgs, err := Generate(context.Background(), Config{Dir: dir, Env: gentest.GoEnv()}, "./work")
	if err != nil {
		b.Fatal(err)
	}
	if len(pkgs) != 1 || pkgs[0].Source == nil {
		b.Fatalf("generation failed: %v", pkgs[0].Diagnostics)
	}
	if got := strings.Count(string(pkgs[0].Source), "\nfunc Publish"); got != 2*n {
		b.Fatalf("%d publishers generated, want %d (and their Async twins)", got, 2*n)
	}
	if got := strings.Count(string(pkgs[0].Source), "\nfunc streamgen_decode_"); got != n {
		b.Fatalf("%d JSON decoders generated, want %d", got, n)
	}
	return pkgs[0]
}

func loadOnce(b *testing.B, dir string) {
	b.Helper()
	pkgs, err := packages.Load(&packages.Config{Mode: loadMode, Dir: dir, Env: gentest.GoEnv()}, "./work")
	if err != nil {
		b.Fatal(err)
	}
	if len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		b.Fatalf("load failed: %v", pkgs[0].Errors)
	}
}

// BenchmarkGenerate times Generate on packages of 50, 200 and 1,000
// handlers: loading, checking and emitting, not writing.
func BenchmarkGenerate(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("handlers=%d", n), func(b *testing.B) {
			dir := syntheticPackage(b, n)
			generateOnce(b, dir, n) // warm the build cache
			for b.Loop() {
				generateOnce(b, dir, n)
			}
		})
	}
}

// BenchmarkGenerateVsLoad alternates Generate with loading the same
// package with go/packages alone, in the mode Generate uses (the floor
// Generate is measured against), in one run (internal/testsupport/benchpair), so that
// the ratio is measured under the same machine load. The ratio is
// generate/load (target: at most 1.5, and 2 at 1,000 handlers).
func BenchmarkGenerateVsLoad(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("handlers=%d", n), func(b *testing.B) {
			dir := syntheticPackage(b, n)
			benchpair.Run(b, benchpair.Pair{
				Units: 1, Unit: "op", Warmup: 1, TimeRatio: true,
				Streamgen: func(b *testing.B) time.Duration {
					start := time.Now()
					generateOnce(b, dir, n)
					return time.Since(start)
				},
				Baseline: func(b *testing.B) time.Duration {
					start := time.Now()
					loadOnce(b, dir)
					return time.Since(start)
				},
			})
		})
	}
}

// BenchmarkRegenerateVsLoad is BenchmarkGenerateVsLoad on a package whose
// generated file is on disk and current, as go generate finds it on every
// run after the first, at 200 and 1,000 handlers. The baseline is the
// go/packages load of the package as it is on disk, its generated file
// included, in the mode Generate uses. The ratio is regenerate/load
// (target: at most 1.1).
func BenchmarkRegenerateVsLoad(b *testing.B) {
	for _, n := range []int{200, 1000} {
		b.Run(fmt.Sprintf("handlers=%d", n), func(b *testing.B) {
			dir := syntheticPackage(b, n)
			if err := generateOnce(b, dir, n).Write(); err != nil {
				b.Fatal(err)
			}
			benchpair.Run(b, benchpair.Pair{
				Units: 1, Unit: "op", Warmup: 1, TimeRatio: true,
				Streamgen: func(b *testing.B) time.Duration {
					start := time.Now()
					p := generateOnce(b, dir, n)
					d := time.Since(start)
					if !p.Current() {
						b.Fatal("the file on disk is not current")
					}
					return d
				},
				Baseline: func(b *testing.B) time.Duration {
					start := time.Now()
					loadOnce(b, dir)
					return time.Since(start)
				},
			})
		})
	}
}
