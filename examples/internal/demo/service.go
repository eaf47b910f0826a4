package demo

import (
	"context"
	"errors"

	"github.com/streamgen/streamgen/runtime"
)

// Service is a demo's App running in the background.
type Service struct {
	stop context.CancelFunc
	done chan struct{} // closed once Run has returned err
	err  error
}

// Start runs app in the background, on a context that ends with ctx or at
// Stop, and returns once the App is ready. When Run returns first, Start
// returns its error: the caller tells an interrupted demo (ctx has ended)
// from a service that did not start.
func Start(ctx context.Context, app *runtime.App) (*Service, error) {
	runCtx, stop := context.WithCancel(ctx)
	s := &Service{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.err = app.Run(runCtx)
	}()
	select {
	case <-app.Ready():
		return s, nil
	case <-s.done:
		stop()
		if s.err == nil {
			return nil, errors.New("demo: the App stopped before it was ready")
		}
		return nil, s.err
	}
}

// Stop stops the App gracefully, waits until Run has returned, and returns
// Run's error. Later calls return the same at once, so a demo can defer
// Stop and also call it where it stops the service.
func (s *Service) Stop() error {
	s.stop()
	<-s.done
	return s.err
}
