package testkit

import (
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// recordingTB stands in for the testing.TB of a test that uses the
// helpers, recording its failures instead of failing, so the helpers' own
// failure reports can be checked.
type recordingTB struct {
	testing.TB

	mu       sync.Mutex
	failures []string
	cleanups []func()
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

// Error records the failure; the test goes on, as with testing.T's.
func (r *recordingTB) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

// Errorf records the failure; the test goes on, as with testing.T's.
func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// Fatalf records the failure and ends the calling goroutine, as
// testing.T's does; call the helper under test through inTest.
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
	r.mu.Unlock()
	goruntime.Goexit()
}

func (r *recordingTB) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// inTest runs f in a goroutine of its own, as a test function, and returns
// once it has returned or failed.
func (r *recordingTB) inTest(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

// end runs the cleanups, last registered first, and returns the failures,
// one a line.
func (r *recordingTB) end() string {
	r.mu.Lock()
	cleanups := slices.Clone(r.cleanups)
	r.cleanups = nil
	r.mu.Unlock()
	for _, f := range slices.Backward(cleanups) {
		r.inTest(f)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.failures, "\n")
}
