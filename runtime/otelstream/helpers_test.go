package otelstream_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/streamgen/streamgen/runtime/otelstream"
)

// telemetry is an Observer recording into the SDK's in-memory span
// recorder and metric reader.
type telemetry struct {
	obs    *otelstream.Observer
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tracer trace.Tracer
}

func newTelemetry(t testing.TB) *telemetry {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	obs, err := otelstream.New(otelstream.WithTracerProvider(tp), otelstream.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	return &telemetry{obs: obs, spans: spans, reader: reader, tracer: tp.Tracer("test")}
}

// named returns the ended spans named name, in the order they started.
func (tm *telemetry) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tm.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	return out
}

// metric returns the collected metric called name, failing the test when
// there is none.
func (tm *telemetry) metric(t testing.TB, name string) metricdata.Metrics {
	t.Helper()
	m, ok := tm.find(t, name)
	if !ok {
		t.Fatalf("no metric %s was collected", name)
	}
	return m
}

// find collects the metrics and returns the one called name, if any.
func (tm *telemetry) find(t testing.TB, name string) (metricdata.Metrics, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tm.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// attr returns span s's attribute key, as text, or "".
func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// hasAttr reports whether s has the attribute key, empty or not.
func hasAttr(s sdktrace.ReadOnlySpan, key string) bool {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return true
		}
	}
	return false
}

// hasAttrs reports whether set holds every key=value of want.
func hasAttrs(set attribute.Set, want map[string]string) bool {
	for k, v := range want {
		got, ok := set.Value(attribute.Key(k))
		if !ok || got.String() != v {
			return false
		}
	}
	return true
}

// histogramCount returns the number of values recorded in m's data points
// that carry want.
func histogramCount(t testing.TB, m metricdata.Metrics, want map[string]string) uint64 {
	t.Helper()
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is a %T, want a float64 histogram", m.Name, m.Data)
	}
	var n uint64
	for _, dp := range h.DataPoints {
		if hasAttrs(dp.Attributes, want) {
			n += dp.Count
		}
	}
	return n
}

// sumValue returns the value of m's (int64 sum) data point that carries
// want, and whether there is one.
func sumValue(t testing.TB, m metricdata.Metrics, want map[string]string) (int64, bool) {
	t.Helper()
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is a %T, want an int64 sum", m.Name, m.Data)
	}
	for _, dp := range s.DataPoints {
		if hasAttrs(dp.Attributes, want) {
			return dp.Value, true
		}
	}
	return 0, false
}

// gaugeValue returns the value of m's (int64 gauge) data point that
// carries want, and whether there is one.
func gaugeValue(t testing.TB, m metricdata.Metrics, want map[string]string) (int64, bool) {
	t.Helper()
	g, ok := m.Data.(metricdata.Gauge[int64])
	if !ok {
		t.Fatalf("%s is a %T, want an int64 gauge", m.Name, m.Data)
	}
	for _, dp := range g.DataPoints {
		if hasAttrs(dp.Attributes, want) {
			return dp.Value, true
		}
	}
	return 0, false
}

// requireChain fails t unless spans form one causal chain under root: the
// first is root's child, each next one the child of the one before, all
// in root's trace.
func requireChain(t testing.TB, root sdktrace.ReadOnlySpan, spans ...sdktrace.ReadOnlySpan) {
	t.Helper()
	parent := root
	for i, s := range spans {
		if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("span %d (%s) is in trace %s, want %s", i+1, s.Name(), s.SpanContext().TraceID(), root.SpanContext().TraceID())
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %d (%s, attempt %s) has parent %s, want %s (%s)", i+1, s.Name(), attr(s, "streamgen.attempt"), s.Parent().SpanID(), parent.SpanContext().SpanID(), parent.Name())
		}
		parent = s
	}
}

// describe lists spans for a failure message.
func describe(spans []sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "\n  %s %s parent=%s attempt=%s verdict=%s", s.Name(), s.SpanContext().SpanID(), s.Parent().SpanID(), attr(s, "streamgen.attempt"), attr(s, "streamgen.verdict"))
	}
	return b.String()
}
