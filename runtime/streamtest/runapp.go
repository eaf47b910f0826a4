package streamtest

import (
	"context"
	"errors"
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
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = app.Run(ctx)
	}()
	var once sync.Once
	var stopErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case <-done:
				stopErr = runErr
			case <-time.After(appPatience):
				stopErr = errors.New("streamtest: the app did not stop within a minute")
			}
		})
		return stopErr
	}
	select {
	case <-app.Ready():
	case <-done:
		cancel()
		t.Fatalf("streamtest: the app did not start: %v", runErr)
	case <-time.After(appPatience):
		_ = stop()
		t.Fatalf("streamtest: the app did not start within %v", appPatience)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("streamtest: the app stopped with: %v", err)
		}
	})
	return stop
}
