package otelstream_test

import (
	"testing"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/streamgen/streamgen/runtime/observe"
	"github.com/streamgen/streamgen/runtime/otelstream"
)

// The outbox's gauges of an App's task are observed, by task, while the
// task runs; a gauge this package does not know is left out.
func TestTaskGaugesAreObservedWhileTheTaskRuns(t *testing.T) {
	tm := newTelemetry(t)
	stopped := tm.obs.WatchGauges("outbox", func() []observe.Gauge {
		return []observe.Gauge{
			{Name: observe.GaugeOutboxBacklog, Value: 12},
			{Name: observe.GaugeOutboxOldestAge, Value: 3.5},
			{Name: "streamgen_cache_entries", Value: 7},
		}
	})
	want := map[string]string{"streamgen.task": "outbox"}
	for name, v := range map[string]float64{otelstream.MetricOutboxBacklog: 12, otelstream.MetricOutboxOldestAge: 3.5} {
		if got, ok := floatGauge(t, tm.metric(t, name), want); !ok || got != v {
			t.Errorf("%s = %v (%v), want %v", name, got, ok, v)
		}
	}
	stopped()
	if m, found := tm.find(t, otelstream.MetricOutboxBacklog); found {
		if _, ok := floatGauge(t, m, want); ok {
			t.Error("a task that ended is still gauged")
		}
	}
}

// floatGauge returns the value of m's (float64 gauge) data point that
// carries want, and whether there is one.
func floatGauge(t testing.TB, m metricdata.Metrics, want map[string]string) (float64, bool) {
	t.Helper()
	g, ok := m.Data.(metricdata.Gauge[float64])
	if !ok {
		t.Fatalf("%s is a %T, want a float64 gauge", m.Name, m.Data)
	}
	for _, dp := range g.DataPoints {
		if hasAttrs(dp.Attributes, want) {
			return dp.Value, true
		}
	}
	return 0, false
}
