package runtime_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/observe"
)

// A task runs once every broker has started, with a context that ends
// when the App begins to stop, and returns before any broker stops: what
// it publishes through them lands.
func TestTaskRunsBetweenTheBrokersStartAndStop(t *testing.T) {
	ev := &events{}
	a := &fakeBroker{name: "a", kind: runtime.RabbitMQ, events: ev}
	var gotEnv runtime.Env
	app := runtime.NewApp("billing", runtime.WithTask(runtime.Task{Name: "relay", Run: func(ctx context.Context, env runtime.Env) error {
		gotEnv = env
		ev.add("task started")
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond) // the work in hand, finished after the stop began
		ev.add("task returned")
		return nil
	}}))
	app.Mount(a, sub("jobs"))
	ctx, cancel := context.WithCancel(context.Background())
	done := run(ctx, app)
	waitReady(t, app, done)
	waitFor(t, "the task to start", func() bool { return slices.Contains(ev.list(), "task started") })
	cancel()
	if err := result(t, done); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []string{"start a [jobs]", "task started", "task returned", "shutdown a"}
	if got := ev.list(); !slices.Equal(got, want) {
		t.Errorf("events\n got %v\nwant %v", got, want)
	}
	if gotEnv.App != "billing" || gotEnv.Logger == nil || gotEnv.Clock == nil {
		t.Errorf("the task's env %+v: want the App's", gotEnv)
	}
}

// An error a task returns while the App runs stops the App with it; a
// task that returns nil ends alone.
func TestTaskErrorStopsTheApp(t *testing.T) {
	ev := &events{}
	errDB := errors.New("the database is gone")
	app := runtime.NewApp("billing",
		runtime.WithTask(runtime.Task{Name: "quiet", Run: func(context.Context, runtime.Env) error { return nil }}),
		runtime.WithTask(runtime.Task{Name: "relay", Run: func(ctx context.Context, env runtime.Env) error {
			time.Sleep(20 * time.Millisecond)
			return errDB
		}}))
	app.Mount(&fakeBroker{name: "a", kind: runtime.RabbitMQ, events: ev}, sub("jobs"))
	err := result(t, run(context.Background(), app))
	if !errors.Is(err, errDB) || err.Error() != "runtime: task relay: the database is gone" {
		t.Fatalf("Run: %v, want the task's error", err)
	}
	if got := ev.list(); !slices.Contains(got, "shutdown a") {
		t.Errorf("events %v: the broker was not shut down", got)
	}
}

// A task still running when the shutdown timeout passes does not hold the
// brokers: they stop, and Run's error names the task.
func TestTaskThatDoesNotEndIsLeftBehind(t *testing.T) {
	ev := &events{}
	release := make(chan struct{})
	defer close(release)
	app := runtime.NewApp("billing", runtime.WithShutdownTimeout(50*time.Millisecond),
		runtime.WithTask(runtime.Task{Name: "stuck", Run: func(context.Context, runtime.Env) error {
			<-release
			return nil
		}}))
	app.Mount(&fakeBroker{name: "a", kind: runtime.RabbitMQ, events: ev}, sub("jobs"))
	ctx, cancel := context.WithCancel(context.Background())
	done := run(ctx, app)
	waitReady(t, app, done)
	cancel()
	err := result(t, done)
	if err == nil || !strings.Contains(err.Error(), "tasks still running after the shutdown timeout of 50ms, left to end on their own: stuck") {
		t.Fatalf("Run: %v", err)
	}
	if got := ev.list(); !slices.Contains(got, "shutdown a") {
		t.Errorf("events %v: the broker was not shut down", got)
	}
}

// An App whose only work is a task runs without subscriptions; a task
// with no function is refused.
func TestAppWithOnlyATask(t *testing.T) {
	ran := make(chan struct{})
	app := runtime.NewApp("producer", runtime.WithTask(runtime.Task{Name: "relay", Run: func(ctx context.Context, env runtime.Env) error {
		close(ran)
		<-ctx.Done()
		return nil
	}}))
	ctx, cancel := context.WithCancel(context.Background())
	done := run(ctx, app)
	waitReady(t, app, done)
	<-ran
	cancel()
	if err := result(t, done); err != nil {
		t.Fatalf("Run: %v", err)
	}

	err := result(t, run(context.Background(), runtime.NewApp("x", runtime.WithTask(runtime.Task{Name: "empty"}))))
	if err == nil || err.Error() != `runtime: WithTask("empty") is given no Run function` {
		t.Fatalf("Run: %v", err)
	}
}

// gaugeObserver is an Observer that exports gauges.
type gaugeObserver struct {
	observe.Observer
	mu      sync.Mutex
	reads   map[string]func() []observe.Gauge
	stopped []string
}

func (o *gaugeObserver) WatchGauges(task string, read func() []observe.Gauge) func() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reads[task] = read
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.stopped = append(o.stopped, task)
	}
}

// A task's report is in the health report, without making the App
// unready, and its gauges go to an Observer that exports gauges, from the
// task's start to its end.
func TestTaskReportsInHealthAndGauges(t *testing.T) {
	obs := &gaugeObserver{reads: map[string]func() []observe.Gauge{}}
	report := func() runtime.TaskReport {
		return runtime.TaskReport{
			Gauges:   []observe.Gauge{{Name: "streamgen_outbox_backlog", Help: "Messages waiting.", Value: 12}},
			Warnings: []string{"queue orders: publish failed"},
		}
	}
	app := runtime.NewApp("billing", runtime.WithObserver(obs),
		runtime.WithTask(runtime.Task{Name: "relay", Report: report, Run: func(ctx context.Context, env runtime.Env) error {
			<-ctx.Done()
			return nil
		}}))
	app.Mount(&fakeBroker{name: "a", kind: runtime.RabbitMQ, events: &events{}}, sub("jobs"))
	if r := app.Readiness(); len(r.Tasks) != 1 || r.Tasks[0].Running || r.Tasks[0].Gauges["streamgen_outbox_backlog"] != 12 {
		t.Errorf("before Run: %+v", r.Tasks)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := run(ctx, app)
	waitReady(t, app, done)
	waitFor(t, "the task to run", func() bool { return app.Readiness().Tasks[0].Running })
	code, r := probeHealth(t, app)
	want := runtime.TaskHealth{Task: "relay", Running: true, Gauges: map[string]float64{"streamgen_outbox_backlog": 12}, Warnings: []string{"queue orders: publish failed"}}
	if code != http.StatusOK || !r.Ready || len(r.Tasks) != 1 || !equalTaskHealth(r.Tasks[0], want) {
		t.Errorf("running: %d %+v, want ready with %+v", code, r, want)
	}
	obs.mu.Lock()
	read := obs.reads["relay"]
	obs.mu.Unlock()
	if read == nil {
		t.Fatal("the observer was not given the task's gauges")
	}
	if g := read(); len(g) != 1 || g[0].Value != 12 || g[0].Name != "streamgen_outbox_backlog" {
		t.Errorf("gauges %+v", g)
	}
	cancel()
	if err := result(t, done); err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if !slices.Equal(obs.stopped, []string{"relay"}) {
		t.Errorf("stopped %v, want the task's gauges stopped when it ended", obs.stopped)
	}
	if r := app.Readiness(); r.Tasks[0].Running {
		t.Errorf("after Run: %+v", r.Tasks)
	}
}

func equalTaskHealth(a, b runtime.TaskHealth) bool {
	return equalReports(runtime.HealthReport{Tasks: []runtime.TaskHealth{a}}, runtime.HealthReport{Tasks: []runtime.TaskHealth{b}})
}

// waitFor polls cond until it holds, or fails t after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
