package runtime_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

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

// Label values are escaped per the text exposition format and kept valid
// UTF-8, so the Prometheus text parser reads every subscription name back:
// a tab, a carriage return, quotes, backslashes, line feeds and bytes that
// are not UTF-8 included.
func TestMetricsEscapesLabelValues(t *testing.T) {
	names := map[string]string{ // subscription name -> label value read back
		"plain":                "plain",
		"tab\there":            "tab\there",
		`odd"name\x`:           `odd"name\x`,
		"line\nfeed\r\nend":    "line\nfeed\r\nend",
		"bad\xffbyte\xc3":      "bad\uFFFDbyte\uFFFD",
		"\\n is not a newline": "\\n is not a newline",
		"ünïcødé ✓":            "ünïcødé ✓",
		"":                     "",
	}
	m := runtime.NewMetrics()
	for name := range names {
		s := m.Subscription(runtime.RabbitMQ, name)
		s.Delivered.Add(int64(len(name)))
		s.Parked.Add(1)
	}
	var b strings.Builder
	if err := m.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(b.String()))
	if err != nil {
		t.Fatalf("the Prometheus text parser refused the output: %v\n%s", err, b.String())
	}

	labels := func(metric *dto.Metric) map[string]string {
		out := map[string]string{}
		for _, l := range metric.GetLabel() {
			out[l.GetName()] = l.GetValue()
		}
		return out
	}
	want := map[string]string{} // label value -> the name it came from
	for name, value := range names {
		want[value] = name
	}
	deliveries := families["streamgen_deliveries_total"]
	if deliveries == nil || len(deliveries.GetMetric()) != len(names) {
		t.Fatalf("streamgen_deliveries_total: %v, want %d series", deliveries, len(names))
	}
	for _, metric := range deliveries.GetMetric() {
		l := labels(metric)
		name, ok := want[l["subscription"]]
		if !ok || l["broker"] != "rabbitmq" {
			t.Errorf("series with labels %q: no such subscription", l)
			continue
		}
		if got := metric.GetCounter().GetValue(); got != float64(len(name)) {
			t.Errorf("subscription %q: deliveries %v, want %d", l["subscription"], got, len(name))
		}
	}
	settled := families["streamgen_settled_total"]
	if settled == nil || len(settled.GetMetric()) != 6*len(names) {
		t.Fatalf("streamgen_settled_total: %v, want %d series", settled, 6*len(names))
	}
	parked := 0
	for _, metric := range settled.GetMetric() {
		l := labels(metric)
		if _, ok := want[l["subscription"]]; !ok {
			t.Errorf("series with labels %q: no such subscription", l)
		}
		if l["outcome"] == "parked" && metric.GetCounter().GetValue() == 1 {
			parked++
		}
	}
	if parked != len(names) {
		t.Errorf("%d subscriptions read back with one parked message, want %d", parked, len(names))
	}
}
