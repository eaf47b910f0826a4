package testkit

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// Service is a command's run function running in the background.
type Service struct {
	t      testing.TB
	cancel context.CancelFunc
	done   chan struct{} // closed once run has returned err
	err    error
}

// Start calls run in its own goroutine with a context that Stop (or the
// end of the test) cancels. When the test ends without Stop, its cleanup
// cancels the context and waits up to Patience for run to return, whatever
// it returns.
func Start(t testing.TB, run func(ctx context.Context) error) *Service {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{t: t, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.err = run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(Patience):
		}
	})
	return s
}

// Stop cancels the service's context, as SIGINT does in main, and fails
// the test unless run returns nil within Patience: a graceful stop.
func (s *Service) Stop() {
	s.t.Helper()
	s.stop(Patience)
}

func (s *Service) stop(patience time.Duration) {
	s.t.Helper()
	s.cancel()
	select {
	case <-s.done:
		if s.err != nil {
			s.t.Fatalf("the service returned %v after a graceful stop, want nil", s.err)
		}
	case <-time.After(patience):
		s.t.Fatalf("the service did not stop within %v of its context ending", patience)
	}
}

// RestoreDefaultLogger puts back the slog default logger when the test
// ends, for commands that call slog.SetDefault.
func RestoreDefaultLogger(t testing.TB) {
	previous := slog.Default()
	t.Cleanup(func() { slog.SetDefault(previous) })
}
