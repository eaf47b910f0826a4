package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// events records what the fake brokers were asked to do, in order.
type events struct {
	mu  sync.Mutex
	log []string
}

func (e *events) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, fmt.Sprintf(format, args...))
}

func (e *events) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.log)
}

// fakeBroker is a runtime.Broker that records its calls.
type fakeBroker struct {
	name        string
	kind        runtime.BrokerKind
	events      *events
	startErr    error
	shutdownErr error

	mu            sync.Mutex
	env           runtime.Env
	consumers     []string
	startCtx      context.Context
	shutdownCtx   context.Context
	shutdownStart time.Time
}

func (b *fakeBroker) Kind() runtime.BrokerKind { return b.kind }

func (b *fakeBroker) Start(ctx context.Context, env runtime.Env, subs []*runtime.Subscription) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.env, b.startCtx = env, ctx
	for _, s := range subs {
		b.consumers = append(b.consumers, s.Name)
	}
	b.events.add("start %s %v", b.name, b.consumers)
	return b.startErr
}

func (b *fakeBroker) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.shutdownCtx, b.shutdownStart = ctx, time.Now()
	b.events.add("shutdown %s", b.name)
	return b.shutdownErr
}

func (b *fakeBroker) fail(err error) {
	b.mu.Lock()
	env := b.env
	b.mu.Unlock()
	env.Fail(err)
}

func sub(name string) *runtime.Subscription {
	return &runtime.Subscription{Name: name, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}
}

// run starts app.Run in the background and returns its result channel.
func run(ctx context.Context, app *runtime.App) <-chan error {
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	return done
}

func waitReady(t *testing.T, app *runtime.App, done <-chan error) {
	t.Helper()
	select {
	case <-app.Ready():
	case err := <-done:
		t.Fatalf("Run returned before Ready: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the app was not ready")
	}
}

func result(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("Run did not return")
		return nil
	}
}

// Run starts the brokers in mount order, each with the consumers of its
// subscriptions, and on cancel shuts them all down with a deadline.
func TestAppRunStartsThenStopsEveryBroker(t *testing.T) {
	ev := &events{}
	a := &fakeBroker{name: "a", kind: runtime.RabbitMQ, events: ev}
	b := &fakeBroker{name: "b", kind: runtime.ZeroMQ, events: ev}
	logs := streamtest.NewLogRecorder(nil)
	codec := runtime.JSON{}
	app := runtime.NewApp("billing", runtime.WithLogger(logs.Logger()), runtime.WithCodec(codec), runtime.WithShutdownTimeout(7*time.Second))
	app.Mount(a, sub("jobs"), sub("invoices"))
	app.Mount(b, sub("events"))
	app.Mount(a, sub("refunds"))
	if app.Name() != "billing" || app.Codec() != codec {
		t.Fatalf("accessors: %q %v", app.Name(), app.Codec())
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := run(ctx, app)
	waitReady(t, app, done)
	if got, want := ev.list(), []string{"start a [jobs invoices refunds]", "start b [events]"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	env := a.env
	if env.App != "billing" || env.Logger == nil || env.Codec != codec || env.Metrics == nil {
		t.Errorf("env %+v: want the app's name, logger, codec and metrics", env)
	}
	env.Metrics.Subscription(string(runtime.RabbitMQ), "jobs").Acked.Add(1)
	if got := app.Stats(); len(got) != 1 || got[0] != (runtime.SubscriptionStats{Broker: runtime.RabbitMQ, Subscription: "jobs", Acked: 1}) {
		t.Errorf("App.Stats = %+v, want what the brokers count through Env.Metrics", got)
	}
	if _, ok := env.Clock.(clock.System); !ok {
		t.Errorf("env.Clock is %T, want clock.System by default", env.Clock)
	}

	cancel()
	if err := result(t, done); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := ev.list()
	if len(got) != 4 || !slices.Contains(got[2:], "shutdown a") || !slices.Contains(got[2:], "shutdown b") {
		t.Fatalf("events %v, want both brokers shut down after starting", got)
	}
	for _, br := range []*fakeBroker{a, b} {
		dl, ok := br.shutdownCtx.Deadline()
		if !ok {
			t.Fatalf("broker %s shut down without a deadline", br.name)
		}
		if left := dl.Sub(br.shutdownStart); left <= 0 || left > 7*time.Second {
			t.Errorf("broker %s got %v to shut down, want at most the 7s timeout", br.name, left)
		}
		if br.startCtx.Err() == nil {
			t.Errorf("broker %s: the context Start got is still live after Run returned", br.name)
		}
	}
	if len(logs.Find(slog.LevelInfo, "app running")) != 1 || len(logs.Find(slog.LevelInfo, "app stopping")) != 1 {
		t.Errorf("log lines %v, want app running and app stopping", logs.Records())
	}
}

// A broker that cannot start stops the brokers already started, and Run
// returns its error, wrapped.
func TestAppRunStartupErrorStopsStartedBrokers(t *testing.T) {
	ev := &events{}
	errRefused := errors.New("connection refused")
	a := &fakeBroker{name: "a", kind: runtime.RabbitMQ, events: ev}
	b := &fakeBroker{name: "b", kind: runtime.ZeroMQ, events: ev, startErr: errRefused}
	c := &fakeBroker{name: "c", kind: runtime.ZeroMQ, events: ev}
	app := runtime.NewApp("billing")
	app.Mount(a, sub("jobs"))
	app.Mount(b, sub("events"))
	app.Mount(c, sub("other"))
	err := result(t, run(context.Background(), app))
	if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "runtime: start zeromq: connection refused") {
		t.Fatalf("Run: %v, want the start error of b", err)
	}
	if got, want := ev.list(), []string{"start a [jobs]", "start b [events]", "shutdown a"}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// An adapter's error names its broker already; the App does not say it
// again.
func TestAppRunBrokerErrorsDoNotStutter(t *testing.T) {
	ev := &events{}
	errTopology := errors.New("zeromq: subscription \"events\" has no endpoint")
	b := &fakeBroker{name: "b", kind: runtime.ZeroMQ, events: ev, startErr: errTopology}
	app := runtime.NewApp("billing")
	app.Mount(b, sub("events"))
	err := result(t, run(context.Background(), app))
	if !errors.Is(err, errTopology) || err.Error() != "runtime: start zeromq: subscription \"events\" has no endpoint" {
		t.Fatalf("Run: %v, want the broker named once", err)
	}
	if got, want := ev.list(), []string{"start b [events]"}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	select {
	case <-app.Ready():
		t.Error("Ready is closed although the app did not start")
	default:
	}
}

// Env.Fail stops the app; Run returns the first error reported.
func TestAppRunStopsWhenABrokerFails(t *testing.T) {
	ev := &events{}
	a := &fakeBroker{name: "a", kind: runtime.RabbitMQ, events: ev}
	b := &fakeBroker{name: "b", kind: runtime.ZeroMQ, events: ev}
	logs := streamtest.NewLogRecorder(nil)
	app := runtime.NewApp("billing", runtime.WithLogger(logs.Logger()))
	app.Mount(a, sub("jobs"))
	app.Mount(b, sub("events"))
	done := run(context.Background(), app)
	waitReady(t, app, done)

	errLost := errors.New("connection lost for good")
	b.fail(nil) // ignored
	b.fail(errLost)
	a.fail(errors.New("a later failure")) // only the first is kept
	err := result(t, done)
	if !errors.Is(err, errLost) || strings.Contains(err.Error(), "a later failure") {
		t.Fatalf("Run: %v, want the first failure only", err)
	}
	if got := ev.list(); !slices.Contains(got, "shutdown a") || !slices.Contains(got, "shutdown b") {
		t.Errorf("events %v, want both brokers shut down", got)
	}
	if recs := logs.Find(slog.LevelError, "a broker failed; stopping"); len(recs) != 1 || recs[0].Attr("err") != errLost.Error() {
		t.Errorf("failure log %v", recs)
	}
	// After Run returned, Fail is harmless.
	b.fail(errors.New("after the end"))
	runtime.Env{}.Fail(errors.New("an Env not made by an App"))
}

// Shutdown errors are returned, joined, after every broker was asked.
func TestAppRunReturnsShutdownErrors(t *testing.T) {
	ev := &events{}
	errStuck := errors.New("handlers still running")
	a := &fakeBroker{name: "a", kind: runtime.RabbitMQ, events: ev, shutdownErr: errStuck}
	b := &fakeBroker{name: "b", kind: runtime.ZeroMQ, events: ev}
	app := runtime.NewApp("billing")
	app.Mount(a, sub("jobs"))
	app.Mount(b, sub("events"))
	ctx, cancel := context.WithCancel(context.Background())
	done := run(ctx, app)
	waitReady(t, app, done)
	cancel()
	err := result(t, done)
	if !errors.Is(err, errStuck) || !strings.Contains(err.Error(), "runtime: stop rabbitmq: handlers still running") {
		t.Fatalf("Run: %v", err)
	}
	if got := ev.list(); !slices.Contains(got, "shutdown b") {
		t.Errorf("events %v: b was not shut down", got)
	}
}

func TestAppRunRefusesWhatCannotRun(t *testing.T) {
	ev := &events{}
	rabbit := func() *fakeBroker { return &fakeBroker{name: "r", kind: runtime.RabbitMQ, events: ev} }
	for _, tc := range []struct {
		name  string
		mount func(*runtime.App)
		want  []string
	}{
		{"nothing mounted", func(*runtime.App) {}, []string{"runtime: no subscriptions are mounted: call the generated Mount before Run"}},
		{"a nil broker", func(a *runtime.App) { a.Mount(nil, sub("jobs")) }, []string{`runtime: subscription "jobs" is mounted on a nil broker`}},
		{"a nil broker pointer", func(a *runtime.App) {
			var b *fakeBroker
			a.Mount(b, sub("jobs"))
		}, []string{`runtime: subscription "jobs" is mounted on a nil broker`}},
		{"kind mismatch", func(a *runtime.App) {
			s := sub("jobs")
			s.Broker = runtime.ZeroMQ
			a.Mount(rabbit(), s)
		}, []string{`subscription "jobs": written for zeromq but mounted on a rabbitmq broker`}},
		{"a prefetch RabbitMQ cannot take", func(a *runtime.App) {
			s := sub("jobs")
			s.Prefetch = 70000
			a.Mount(rabbit(), s)
		}, []string{`subscription "jobs": prefetch is 70000: RabbitMQ takes at most 65535`}},
		{"a concurrency that raises the prefetch beyond what RabbitMQ takes", func(a *runtime.App) {
			s := sub("jobs")
			s.Concurrency = 70000
			a.Mount(rabbit(), s)
		}, []string{`subscription "jobs": concurrency is 70000, which raises the prefetch to 70000`}},
		{"mounted twice on one broker", func(a *runtime.App) {
			b := rabbit()
			a.Mount(b, sub("jobs"))
			a.Mount(b, sub("jobs"))
		}, []string{`runtime: subscription "jobs" is mounted twice on the same rabbitmq broker`}},
		{"a nil receiver", func(a *runtime.App) {
			var svc *fakeBroker // any pointer type
			if a.Receiver("svc", svc, "Service.Place", "Service.Refund") {
				t.Error("Receiver took a nil pointer")
			}
			if !a.Receiver("ok", &fakeBroker{}, "Service.Audit") || !a.Receiver("value", struct{}{}, "Ledger.Record") {
				t.Error("Receiver refused a value that is not nil")
			}
			a.Mount(rabbit(), sub("jobs"))
		}, []string{"runtime: Mount (at ", ") was given a nil *runtime_test.fakeBroker as svc, whose methods Service.Place and Service.Refund handle messages: pass a *runtime_test.fakeBroker that is not nil"}},
		{"every problem at once", func(a *runtime.App) {
			b := rabbit()
			a.Mount(nil, sub("x"))
			a.Mount(b, sub("jobs"), sub("jobs"), &runtime.Subscription{Name: "bad"})
		}, []string{`"x" is mounted on a nil broker`, `"jobs" is mounted twice`, `subscription "bad": no handlers`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := runtime.NewApp("billing")
			tc.mount(app)
			err := result(t, run(context.Background(), app))
			if err == nil {
				t.Fatal("Run succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Run: %v\nwant it to say %q", err, w)
				}
			}
		})
	}
	if got := ev.list(); len(got) != 0 {
		t.Errorf("brokers were started or stopped for apps that cannot run: %v", got)
	}
}

// The same subscription name on two brokers is two subscriptions.
func TestAppAllowsOneNameOnTwoBrokers(t *testing.T) {
	ev := &events{}
	a := &fakeBroker{name: "a", kind: runtime.RabbitMQ, events: ev}
	b := &fakeBroker{name: "b", kind: runtime.RabbitMQ, events: ev}
	app := runtime.NewApp("billing")
	app.Mount(a, sub("jobs"))
	app.Mount(b, sub("jobs"))
	ctx, cancel := context.WithCancel(context.Background())
	done := run(ctx, app)
	waitReady(t, app, done)
	cancel()
	if err := result(t, done); err != nil {
		t.Fatal(err)
	}
}

func TestAppRunTwice(t *testing.T) {
	app := runtime.NewApp("billing", runtime.WithClock(clock.System{}))
	app.Mount(&fakeBroker{name: "a", kind: runtime.ZeroMQ, events: &events{}}, sub("jobs"))
	ctx, cancel := context.WithCancel(context.Background())
	done := run(ctx, app)
	waitReady(t, app, done)
	if err := app.Run(ctx); err == nil || err.Error() != "runtime: App.Run called twice" {
		t.Errorf("second Run while running: %v", err)
	}
	cancel()
	if err := result(t, done); err != nil {
		t.Fatal(err)
	}
	if err := app.Run(context.Background()); err == nil || err.Error() != "runtime: App.Run called twice" {
		t.Errorf("Run after the first ended: %v", err)
	}
}

// The clock given to the App is the one brokers get.
func TestAppPassesItsClock(t *testing.T) {
	clock := fixedClock{}
	b := &fakeBroker{name: "a", kind: runtime.ZeroMQ, events: &events{}}
	app := runtime.NewApp("billing", runtime.WithClock(clock))
	app.Mount(b, sub("jobs"))
	ctx, cancel := context.WithCancel(context.Background())
	done := run(ctx, app)
	waitReady(t, app, done)
	cancel()
	if err := result(t, done); err != nil {
		t.Fatal(err)
	}
	if b.env.Clock != clock {
		t.Errorf("env.Clock = %v, want the App's clock", b.env.Clock)
	}
}

type fixedClock struct{}

func (fixedClock) Now() time.Time                              { return time.Unix(0, 0) }
func (fixedClock) AfterFunc(time.Duration, func()) clock.Timer { return nil }
