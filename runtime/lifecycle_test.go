package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// hook returns an OnStart or OnStop function that records name, with the
// state of its context, and returns err.
func hook(ev *events, name string, err error) func(context.Context) error {
	return func(ctx context.Context) error {
		ev.add("%s (ctx live: %v)", name, ctx.Err() == nil)
		return err
	}
}

// Start hooks run in order before any broker starts; stop hooks run in
// reverse order after every broker has stopped, with a live context
// bounded by the shutdown timeout.
func TestHooksRunAroundTheBrokers(t *testing.T) {
	ev := &events{}
	a := &fakeBroker{name: "a", kind: runtime.RabbitMQ, events: ev}
	var stopDeadline time.Duration
	app := runtime.NewApp("billing",
		runtime.WithShutdownTimeout(5*time.Second),
		runtime.OnStart(hook(ev, "start 1", nil)),
		runtime.OnStop(hook(ev, "stop 1", nil)),
		runtime.OnStart(hook(ev, "start 2", nil)),
		runtime.OnStop(func(ctx context.Context) error {
			dl, ok := ctx.Deadline()
			if ok {
				stopDeadline = time.Until(dl)
			}
			return hook(ev, "stop 2", nil)(ctx)
		}),
		runtime.OnStart(nil), runtime.OnStop(nil), // ignored
	)
	app.Mount(a, sub("jobs"))
	ctx, cancel := context.WithCancel(context.Background())
	done := run(ctx, app)
	waitReady(t, app, done)
	cancel()
	if err := result(t, done); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []string{"start 1 (ctx live: true)", "start 2 (ctx live: true)", "start a [jobs]", "shutdown a", "stop 2 (ctx live: true)", "stop 1 (ctx live: true)"}
	if got := ev.list(); !slices.Equal(got, want) {
		t.Errorf("events\n got %v\nwant %v", got, want)
	}
	if stopDeadline <= 0 || stopDeadline > 5*time.Second {
		t.Errorf("a stop hook got %v, want a deadline within the 5s shutdown timeout", stopDeadline)
	}
}

// A start hook's error stops startup: no broker starts, Run returns the
// error wrapped, and only the stop hooks given before the failed start
// hook run.
func TestStartHookErrorStopsStartup(t *testing.T) {
	ev := &events{}
	errDB := errors.New("database refused the connection")
	a := &fakeBroker{name: "a", kind: runtime.RabbitMQ, events: ev}
	app := runtime.NewApp("billing",
		runtime.OnStop(hook(ev, "stop logger", nil)),
		runtime.OnStart(hook(ev, "open cache", nil)),
		runtime.OnStop(hook(ev, "close cache", nil)),
		runtime.OnStart(hook(ev, "open db", errDB)),
		runtime.OnStop(hook(ev, "close db", nil)),
		runtime.OnStart(hook(ev, "never", nil)),
	)
	app.Mount(a, sub("jobs"))
	err := result(t, run(context.Background(), app))
	if !errors.Is(err, errDB) || err.Error() != "runtime: start hook 2 of 3: database refused the connection" {
		t.Fatalf("Run: %v, want the hook's error, wrapped once", err)
	}
	want := []string{"open cache (ctx live: true)", "open db (ctx live: true)", "close cache (ctx live: true)", "stop logger (ctx live: true)"}
	if got := ev.list(); !slices.Equal(got, want) {
		t.Errorf("events\n got %v\nwant %v", got, want)
	}
	select {
	case <-app.Ready():
		t.Error("Ready was closed after a failed start hook")
	default:
	}
}

// Stop hooks run when a broker fails to start, after the brokers already
// started have stopped, and every stop hook runs even when one fails;
// their errors join Run's.
func TestStopHooksRunAfterAFailedStartAndJoinErrors(t *testing.T) {
	ev := &events{}
	errRefused := errors.New("connection refused")
	errFlush := errors.New("flush failed")
	a := &fakeBroker{name: "a", kind: runtime.RabbitMQ, events: ev}
	b := &fakeBroker{name: "b", kind: runtime.ZeroMQ, events: ev, startErr: errRefused}
	app := runtime.NewApp("billing",
		runtime.OnStart(hook(ev, "open", nil)),
		runtime.OnStop(hook(ev, "close 1", errFlush)),
		runtime.OnStop(hook(ev, "close 2", errors.New("second"))),
	)
	app.Mount(a, sub("jobs"))
	app.Mount(b, sub("events"))
	err := result(t, run(context.Background(), app))
	if !errors.Is(err, errRefused) || !errors.Is(err, errFlush) {
		t.Fatalf("Run: %v, want the start error and the stop hooks' errors", err)
	}
	for _, part := range []string{"runtime: start zeromq: connection refused", "runtime: stop hook 1 of 2: flush failed", "runtime: stop hook 2 of 2: second"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("Run: %v, lacks %q", err, part)
		}
	}
	want := []string{"open (ctx live: true)", "start a [jobs]", "start b [events]", "shutdown a", "close 2 (ctx live: true)", "close 1 (ctx live: true)"}
	if got := ev.list(); !slices.Equal(got, want) {
		t.Errorf("events\n got %v\nwant %v", got, want)
	}
}

// A start hook gets Run's context: it ends when Run's does, so a hook
// that waits for something gives up with Run.
func TestStartHookGetsRunsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	app := runtime.NewApp("billing", runtime.OnStart(func(hctx context.Context) error {
		cancel()
		<-hctx.Done()
		return fmt.Errorf("waiting for the database: %w", hctx.Err())
	}))
	app.Mount(&fakeBroker{name: "a", kind: runtime.RabbitMQ, events: &events{}}, sub("jobs"))
	if err := result(t, run(ctx, app)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want the hook's cancellation", err)
	}
}
