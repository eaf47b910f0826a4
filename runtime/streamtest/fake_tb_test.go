package streamtest_test

import (
	"fmt"
	"io"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
)

// fakeTB records failures instead of failing the test, so the harness's own
// failure reports can be tested. Run its test code with run.
type fakeTB struct {
	testing.TB

	mu       sync.Mutex
	failures []string
	cleanups []func()
}

func newFakeTB(t *testing.T) *fakeTB { return &fakeTB{TB: t} }

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Output() io.Writer { return io.Discard }
func (f *fakeTB) Error(args ...any) { f.record(fmt.Sprint(args...)) }
func (f *fakeTB) Errorf(format string, args ...any) {
	f.record(fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatal(args ...any) { f.record(fmt.Sprint(args...)); goruntime.Goexit() }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.record(fmt.Sprintf(format, args...))
	goruntime.Goexit()
}

func (f *fakeTB) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.failures) > 0
}

func (f *fakeTB) Cleanup(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups = append(f.cleanups, fn)
}

func (f *fakeTB) record(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, msg)
}

// run calls fn in its own goroutine, as a test function, and waits for it.
func (f *fakeTB) run(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	<-done
}

// finish runs the cleanups, last registered first, and returns every
// failure recorded.
func (f *fakeTB) finish() string {
	f.mu.Lock()
	cleanups := f.cleanups
	f.cleanups = nil
	f.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		f.run(cleanups[i])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.failures, "\n")
}
