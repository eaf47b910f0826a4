package runtime_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

func TestMetricsWritePrometheus(t *testing.T) {
	m := runtime.NewMetrics()
	jobs := m.Subscription(runtime.ZeroMQ, "jobs")
	jobs.Delivered.Add(5)
	jobs.Retried.Add(4)
	jobs.Dropped.Add(1)
	orders := m.Subscription(runtime.RabbitMQ, "orders")
	orders.Delivered.Add(3)
	orders.Acked.Add(1)
	orders.Parked.Add(1)
	orders.Rejected.Add(1)
	orders.Failed.Add(2)
	if m.Subscription(runtime.ZeroMQ, "jobs") != jobs {
		t.Fatal("Subscription made new counters for a known subscription")
	}

	var b strings.Builder
	if err := m.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	want := `# HELP streamgen_deliveries_total Deliveries received, poison included.
# TYPE streamgen_deliveries_total counter
streamgen_deliveries_total{broker="rabbitmq",subscription="orders"} 3
streamgen_deliveries_total{broker="zeromq",subscription="jobs"} 5
# HELP streamgen_settled_total Deliveries settled, by outcome.
# TYPE streamgen_settled_total counter
streamgen_settled_total{broker="rabbitmq",subscription="orders",outcome="acked"} 1
streamgen_settled_total{broker="rabbitmq",subscription="orders",outcome="retried"} 0
streamgen_settled_total{broker="rabbitmq",subscription="orders",outcome="parked"} 1
streamgen_settled_total{broker="rabbitmq",subscription="orders",outcome="rejected"} 1
streamgen_settled_total{broker="rabbitmq",subscription="orders",outcome="dropped"} 0
streamgen_settled_total{broker="rabbitmq",subscription="orders",outcome="failed"} 2
streamgen_settled_total{broker="zeromq",subscription="jobs",outcome="acked"} 0
streamgen_settled_total{broker="zeromq",subscription="jobs",outcome="retried"} 4
streamgen_settled_total{broker="zeromq",subscription="jobs",outcome="parked"} 0
streamgen_settled_total{broker="zeromq",subscription="jobs",outcome="rejected"} 0
streamgen_settled_total{broker="zeromq",subscription="jobs",outcome="dropped"} 1
streamgen_settled_total{broker="zeromq",subscription="jobs",outcome="failed"} 0
`
	if got := b.String(); got != want {
		t.Errorf("WritePrometheus wrote\n%s\nwant\n%s", got, want)
	}

	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if rec.Body.String() != want {
		t.Errorf("ServeHTTP served\n%s", rec.Body.String())
	}
}

func TestMetricsSnapshotIsSorted(t *testing.T) {
	m := runtime.NewMetrics()
	m.Subscription(runtime.ZeroMQ, "b").Acked.Add(2)
	m.Subscription(runtime.ZeroMQ, "a")
	m.Subscription(runtime.RabbitMQ, "z").Delivered.Add(1)
	got := m.Snapshot()
	if len(got) != 3 {
		t.Fatalf("%d entries", len(got))
	}
	order := []string{string(got[0].Broker) + "/" + got[0].Subscription, string(got[1].Broker) + "/" + got[1].Subscription, string(got[2].Broker) + "/" + got[2].Subscription}
	if strings.Join(order, " ") != "rabbitmq/z zeromq/a zeromq/b" {
		t.Errorf("order %v", order)
	}
	if got[2].Acked != 2 || got[0].Delivered != 1 {
		t.Errorf("snapshot %+v", got)
	}
	var empty strings.Builder
	if err := runtime.NewMetrics().WritePrometheus(&empty); err != nil || strings.Count(empty.String(), "\n") != 4 {
		t.Errorf("empty metrics wrote %q (%v), want the four HELP/TYPE lines", empty.String(), err)
	}
}

// Label values are quoted and escaped.
func TestMetricsEscapesLabelValues(t *testing.T) {
	m := runtime.NewMetrics()
	m.Subscription(runtime.RabbitMQ, `odd"name\x`)
	var b strings.Builder
	if err := m.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `subscription="odd\"name\\x"`) {
		t.Errorf("output %s does not escape the quote and the backslash", b.String())
	}
}
