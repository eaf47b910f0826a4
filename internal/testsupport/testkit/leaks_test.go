package testkit

import (
	"strings"
	"testing"
)

func TestNoLeaksPassesWhenTheTestsGoroutinesAreGone(t *testing.T) {
	r := &recordingTB{TB: t}
	r.inTest(func() {
		NoLeaks(r)
		done := make(chan struct{})
		go func() { close(done) }()
		<-done
	})
	if got := r.end(); got != "" {
		t.Errorf("failures %q, want none", got)
	}
}

func TestNoLeaksFailsOnAGoroutineLeftRunning(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	r := &recordingTB{TB: t}
	r.inTest(func() {
		NoLeaks(r)
		go func() { <-release }()
	})
	if got := r.end(); !strings.Contains(got, "found unexpected goroutines") || !strings.Contains(got, "TestNoLeaksFailsOnAGoroutineLeftRunning") {
		t.Errorf("failures %q, want goleak's report naming the goroutine left running", got)
	}
}
