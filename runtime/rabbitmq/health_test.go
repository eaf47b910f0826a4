package rabbitmq

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/observe"
)

// eventObserver records the events the Broker reports.
type eventObserver struct {
	mu     sync.Mutex
	events []observe.Event
}

func (o *eventObserver) StartDelivery(ctx context.Context, _ observe.DeliveryStart) (context.Context, observe.DeliveryObservation) {
	return ctx, nopObservation{}
}
func (o *eventObserver) StartConsumer(observe.ConsumerInfo) func() { return func() {} }
func (o *eventObserver) BrokerEvent(e observe.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, e)
}

func (o *eventObserver) count(kind observe.EventKind) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, e := range o.events {
		if e.Kind == kind && e.Broker == string(runtime.RabbitMQ) {
			n++
		}
	}
	return n
}

func (o *eventObserver) confirmed() []observe.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []observe.Event
	for _, e := range o.events {
		if e.Kind == observe.Confirmed {
			out = append(out, e)
		}
	}
	return out
}

type nopObservation struct{}

func (nopObservation) CopyHeaders(func(string, string)) {}
func (nopObservation) End(observe.Settlement)           {}

// health asks the App's readiness probe.
func health(t testing.TB, app *runtime.App) (int, runtime.HealthReport) {
	t.Helper()
	code, r, err := readHealth(app)
	if err != nil {
		t.Fatal(err)
	}
	return code, r
}

// readHealth asks app's readiness probe, as health does, from any
// goroutine.
func readHealth(app *runtime.App) (int, runtime.HealthReport, error) {
	rec := httptest.NewRecorder()
	app.Health().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	var r runtime.HealthReport
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		return 0, r, fmt.Errorf("health body %q: %v", rec.Body.String(), err)
	}
	return rec.Code, r, nil
}

// watchNotReady asks app's readiness probe every few milliseconds until
// it answers 503 with its one broker not ready; the function it returns
// says the reason then, and whether that happened yet.
func watchNotReady(app *runtime.App) func() (reason string, seen bool) {
	var (
		mu     sync.Mutex
		reason string
		seen   bool
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(5 * time.Minute)
		for time.Now().Before(deadline) {
			code, r, err := readHealth(app)
			if err == nil && code == http.StatusServiceUnavailable && len(r.Brokers) == 1 && !r.Brokers[0].Ready {
				mu.Lock()
				reason, seen = r.Brokers[0].Reason, true
				mu.Unlock()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return func() (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		if seen {
			<-done
		}
		return reason, seen
	}
}

// While the Broker reconnects after the broker closed its connections, the
// App's readiness probe answers 503 and says why; once it consumes again,
// 200. The reconnect is reported to the App's Observer, and so is how long
// each publish took to be confirmed: Publish's and a retry copy's.
func TestHealthAndEventsAcrossAReconnect(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("health")
	name := "streamgen-test-health-" + randomHex(4)
	// A slow first reconnect, so that the probe sees the broker down even
	// when the command that closes the connection returns late (it takes
	// seconds on a loaded machine).
	b := New(brokerURL(), WithConnectionName(name), WithReconnectBackoff(8*time.Second, 8*time.Second, 0))
	if ready, why := b.Ready(); ready || why != "not started" {
		t.Errorf("Ready() before Start = %v, %q", ready, why)
	}
	var c calls
	h := handler("Job", runtime.Policy{MaxAttempts: 2}, &c, func(_ *job, md runtime.Metadata) runtime.Outcome {
		if md.Attempt == 1 {
			return runtime.Retry().Because(errFailed)
		}
		return runtime.Ack()
	})
	obs := &eventObserver{}
	app := runtime.NewApp("streamgen-test", runtime.WithObserver(obs), runtime.WithShutdownTimeout(20*time.Second))
	app.Mount(b, sub(q, 50*time.Millisecond, h))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			t.Fatal("the App did not stop")
			return nil
		}
	}
	t.Cleanup(func() { _ = stop() })
	select {
	case <-app.Ready():
	case err := <-done:
		t.Fatalf("the App did not start: %v", err)
	case <-time.After(patience):
		t.Fatal("the App did not start in time")
	}
	if code, r := health(t, app); code != http.StatusOK || !r.Ready || len(r.Brokers) != 1 || !r.Brokers[0].Ready {
		t.Fatalf("running: %d %+v, want 200 and the broker ready", code, r)
	}

	publishJob(t, b, q, "Job", job{ID: 1})
	testkit.Eventually(t, "the retried job to be handled", func() bool { return c.len() >= 2 })
	testkit.Eventually(t, "the publish and the retry copy to be confirmed", func() bool { return len(obs.confirmed()) >= 2 })
	for _, e := range obs.confirmed() {
		if e.Broker != string(runtime.RabbitMQ) || e.Duration <= 0 || e.Err != nil {
			t.Errorf("confirm event %+v, want a duration and no error", e)
		}
	}

	// The probe is watched from before the connections close, so that a
	// reconnect that comes before rabbitmqctl returns (it takes seconds on
	// RabbitMQ 4 and a busy machine) is not missed.
	notReady := watchNotReady(app)
	if n := testkit.CloseConnections(t, name); n == 0 {
		t.Fatalf("no connection named %s to close", name)
	}
	var reason string
	testkit.Eventually(t, "the probe to report the broker not ready", func() bool {
		var seen bool
		reason, seen = notReady()
		return seen
	})
	if !strings.Contains(reason, "reconnecting") || !strings.Contains(reason, "closed") {
		t.Errorf("not-ready reason %q: want it to say the connection closed and the broker reconnects", reason)
	}
	testkit.Eventually(t, "the probe to report the broker ready again", func() bool {
		code, _ := health(t, app)
		return code == http.StatusOK
	})
	if n := obs.count(observe.Reconnected); n != 1 {
		t.Errorf("%d reconnects reported, want 1", n)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ready, why := b.Ready(); ready || why != "stopped" {
		t.Errorf("Ready() after stop = %v, %q", ready, why)
	}
}
