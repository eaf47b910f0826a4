package testkit

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestStopIsAGracefulStop(t *testing.T) {
	r := &recordingTB{TB: t}
	var sawCancel bool
	r.inTest(func() {
		svc := Start(r, func(ctx context.Context) error {
			<-ctx.Done()
			sawCancel = true
			return nil
		})
		svc.Stop()
	})
	if got := r.end(); got != "" || !sawCancel {
		t.Errorf("failures %q, run saw its context end: %v; want no failure after a cancelled run returned nil", got, sawCancel)
	}
}

func TestStopFailsWhenTheServiceReturnsAnError(t *testing.T) {
	r := &recordingTB{TB: t}
	r.inTest(func() {
		svc := Start(r, func(ctx context.Context) error {
			<-ctx.Done()
			return errors.New("lost a message on the way out")
		})
		svc.Stop()
		t.Error("Stop returned although the service failed")
	})
	if got := r.end(); got != "the service returned lost a message on the way out after a graceful stop, want nil" {
		t.Errorf("failures %q", got)
	}
}

func TestStopFailsWhenTheServiceDoesNotStop(t *testing.T) {
	r := &recordingTB{TB: t}
	release := make(chan struct{})
	r.inTest(func() {
		svc := Start(r, func(context.Context) error {
			<-release // ignores its context
			return nil
		})
		svc.stop(20 * time.Millisecond)
		t.Error("stop returned although the service kept running")
	})
	close(release)
	if got := r.end(); !strings.HasPrefix(got, "the service did not stop within 20ms") {
		t.Errorf("failures %q", got)
	}
}

func TestTheEndOfTheTestStopsTheService(t *testing.T) {
	r := &recordingTB{TB: t}
	returned := make(chan struct{})
	r.inTest(func() {
		Start(r, func(ctx context.Context) error {
			defer close(returned)
			<-ctx.Done()
			return errors.New("stopped")
		})
	})
	select {
	case <-returned:
		t.Fatal("the service stopped before the test ended")
	default:
	}
	if got := r.end(); got != "" {
		t.Errorf("failures %q: without Stop, what run returns is not checked", got)
	}
	select {
	case <-returned:
	default:
		t.Fatal("the test's cleanup returned before the service did")
	}
}

func TestRestoreDefaultLoggerPutsItBack(t *testing.T) {
	before := slog.Default()
	r := &recordingTB{TB: t}
	RestoreDefaultLogger(r)
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	r.end()
	if slog.Default() != before {
		slog.SetDefault(before)
		t.Error("the default logger was not put back")
	}
}
