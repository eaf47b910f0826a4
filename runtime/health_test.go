package runtime_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

// reportingBroker is a fakeBroker that reports its readiness.
type reportingBroker struct {
	*fakeBroker
	mu     sync.Mutex
	ready  bool
	reason string
}

func (b *reportingBroker) Ready() (bool, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ready, b.reason
}

func (b *reportingBroker) set(ready bool, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ready, b.reason = ready, reason
}

// warningBroker is a reportingBroker that reports warnings.
type warningBroker struct {
	*reportingBroker
	warnings []string
}

func (b *warningBroker) Warnings() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.warnings
}

// A broker's warnings are in the report while the App runs, ready or not,
// and do not make it unready.
func TestHealthCarriesWarnings(t *testing.T) {
	ev := &events{}
	wb := &warningBroker{reportingBroker: &reportingBroker{fakeBroker: &fakeBroker{name: "a", kind: runtime.RabbitMQ, events: ev}, ready: true},
		warnings: []string{"3 copies of \"jobs\" await their confirm"}}
	app := runtime.NewApp("billing")
	app.Mount(wb, sub("jobs"))
	if _, r := probeHealth(t, app); len(r.Brokers[0].Warnings) != 0 {
		t.Errorf("before Run: %+v, want no warnings", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := run(ctx, app)
	waitReady(t, app, done)
	code, r := probeHealth(t, app)
	want := runtime.HealthReport{App: "billing", Ready: true, Brokers: []runtime.BrokerHealth{
		{Broker: runtime.RabbitMQ, Subscriptions: []string{"jobs"}, Ready: true, Warnings: []string{"3 copies of \"jobs\" await their confirm"}},
	}}
	if code != http.StatusOK || !equalReports(r, want) {
		t.Errorf("running: %d %+v, want 200 %+v", code, r, want)
	}
	cancel()
	if err := result(t, done); err != nil {
		t.Fatal(err)
	}
}

// probe serves one request to app.Health and decodes the answer.
func probeHealth(t *testing.T, app *runtime.App) (int, runtime.HealthReport) {
	t.Helper()
	rec := httptest.NewRecorder()
	app.Health().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var r runtime.HealthReport
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatalf("body %q: %v", rec.Body.String(), err)
	}
	return rec.Code, r
}

// Health answers 200 with every broker ready while the App runs, and 503
// with the reason before it starts, while a broker is not ready, and once
// it stops. A broker that does not report is ready while the App runs.
func TestHealth(t *testing.T) {
	ev := &events{}
	rb := &reportingBroker{fakeBroker: &fakeBroker{name: "a", kind: runtime.RabbitMQ, events: ev}, ready: true}
	zb := &fakeBroker{name: "b", kind: runtime.ZeroMQ, events: ev}
	app := runtime.NewApp("billing")
	app.Mount(rb, sub("jobs"), sub("invoices"))
	app.Mount(zb, sub("events"))

	code, r := probeHealth(t, app)
	if code != http.StatusServiceUnavailable || r.Ready || r.Reason != "the app has not been started" || len(r.Brokers) != 2 || r.Brokers[0].Reason != "the app has not been started" {
		t.Errorf("before Run: %d %+v", code, r)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := run(ctx, app)
	waitReady(t, app, done)
	code, r = probeHealth(t, app)
	want := runtime.HealthReport{App: "billing", Ready: true, Brokers: []runtime.BrokerHealth{
		{Broker: runtime.RabbitMQ, Subscriptions: []string{"jobs", "invoices"}, Ready: true},
		{Broker: runtime.ZeroMQ, Subscriptions: []string{"events"}, Ready: true},
	}}
	if code != http.StatusOK || !equalReports(r, want) {
		t.Errorf("running: %d %+v, want 200 %+v", code, r, want)
	}

	rb.set(false, "reconnecting: connection reset by peer")
	code, r = probeHealth(t, app)
	if code != http.StatusServiceUnavailable || r.Ready || r.Reason != "1 of 2 brokers not ready" ||
		r.Brokers[0].Ready || r.Brokers[0].Reason != "reconnecting: connection reset by peer" || !r.Brokers[1].Ready {
		t.Errorf("reconnecting: %d %+v", code, r)
	}
	rb.set(false, "")
	if _, r = probeHealth(t, app); r.Brokers[0].Reason != "the broker is not ready" {
		t.Errorf("a broker not ready without a reason: %+v", r.Brokers[0])
	}
	rb.set(true, "stale reason")
	if code, r = probeHealth(t, app); code != http.StatusOK || r.Brokers[0].Reason != "" {
		t.Errorf("ready again: %d %+v", code, r)
	}

	cancel()
	if err := result(t, done); err != nil {
		t.Fatal(err)
	}
	code, r = probeHealth(t, app)
	if code != http.StatusServiceUnavailable || r.Ready || r.Reason != "the app has stopped" || r.Brokers[1].Ready {
		t.Errorf("after Run: %d %+v", code, r)
	}
}

// While the App starts, and when it cannot, it is not ready.
func TestHealthWhileStarting(t *testing.T) {
	ev := &events{}
	var during runtime.HealthReport
	var app *runtime.App
	app = runtime.NewApp("billing", runtime.OnStart(func(context.Context) error {
		during = app.Readiness()
		return nil
	}))
	app.Mount(&fakeBroker{name: "a", kind: runtime.RabbitMQ, events: ev, startErr: context.DeadlineExceeded}, sub("jobs"))
	if err := result(t, run(context.Background(), app)); err == nil {
		t.Fatal("Run succeeded with a broker that cannot start")
	}
	if during.Ready || during.Reason != "the app is starting" {
		t.Errorf("during startup: %+v", during)
	}
	if r := app.Readiness(); r.Ready || r.Reason != "the app has stopped" {
		t.Errorf("after a failed start: %+v", r)
	}
}

func equalReports(a, b runtime.HealthReport) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// shutdownProbe is a fakeBroker that reads the App's readiness as it is
// shut down.
type shutdownProbe struct {
	*fakeBroker
	app    *runtime.App
	during runtime.HealthReport
}

func (b *shutdownProbe) Shutdown(ctx context.Context) error {
	b.during = b.app.Readiness()
	return b.fakeBroker.Shutdown(ctx)
}

// While the App stops, it is not ready.
func TestHealthWhileStopping(t *testing.T) {
	app := runtime.NewApp("billing")
	b := &shutdownProbe{fakeBroker: &fakeBroker{name: "a", kind: runtime.RabbitMQ, events: &events{}}, app: app}
	app.Mount(b, sub("jobs"))
	ctx, cancel := context.WithCancel(context.Background())
	done := run(ctx, app)
	waitReady(t, app, done)
	cancel()
	if err := result(t, done); err != nil {
		t.Fatal(err)
	}
	if b.during.Ready || b.during.Reason != "the app is stopping" || b.during.Brokers[0].Reason != "the app is stopping" {
		t.Errorf("during shutdown: %+v", b.during)
	}
}
