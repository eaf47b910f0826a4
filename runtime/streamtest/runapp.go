package streamtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// appPatience bounds how long RunApp waits for an App to start or stop.
const appPatience = time.Minute

// RunApp runs app in the background, for a test (or benchmark) of a real
// broker adapter, and returns once the App is ready. It fails t when Run
// returns first or the App is not ready within a minute.
//
// The returned stop cancels the App's context, waits for Run (a minute at
// most) and returns its error; later calls return the same. The test's
// cleanup calls stop and fails the test unless it returns nil: a graceful
// stop.
func RunApp(t testing.TB, app *runtime.App) (stop func() error) {
	t.Helper()
	return RunAppWithin(t, app, appPatience)
}

// RunAppWithin is RunApp with patience, instead of a minute, as the bound
// of the wait for the App to start and of stop's wait for Run to return.
// Make it longer than the App's shutdown timeout, so that stop sees how
// Run ended.
func RunAppWithin(t testing.TB, app *runtime.App, patience time.Duration) (stop func() error) {
	t.Helper()
	run, err := startApp(context.Background(), app, patience)
	var once sync.Once
	var stopErr error
	stop = func() error {
		once.Do(func() {
			run.cancel()
			select {
			case <-run.done:
				stopErr = run.err
			case <-time.After(patience):
				stopErr = fmt.Errorf("streamtest: the app did not stop within %v", patience)
			}
		})
		return stopErr
	}
	if err != nil {
		_ = stop()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("streamtest: the app stopped with: %v", err)
		}
	})
	return stop
}

// appRun is an App running in the background.
type appRun struct {
	cancel context.CancelFunc // ends the App's context: a graceful stop
	done   chan struct{}      // closed once Run has returned
	err    error              // what Run returned, set before done is closed
}

// startApp runs app in the background with a context derived from ctx,
// and waits until it is ready. It returns an error when Run returns first,
// or when the App is not ready within patience; the App's context is then
// cancelled, and done still tells when Run returns.
func startApp(ctx context.Context, app *runtime.App, patience time.Duration) (*appRun, error) {
	ctx, cancel := context.WithCancel(ctx)
	r := &appRun{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = app.Run(ctx)
	}()
	select {
	case <-app.Ready():
		return r, nil
	case <-r.done:
		cancel()
		return r, fmt.Errorf("streamtest: the app did not start: %w", r.err)
	case <-time.After(patience):
		cancel()
		return r, fmt.Errorf("streamtest: the app did not start within %v", patience)
	}
}
