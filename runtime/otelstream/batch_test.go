package otelstream_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/otelstream"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// A batch handler call has one span, linked to the span of each of its
// deliveries, which keep their own; the handler runs in the batch's span,
// and the handler duration is recorded once per message.
func TestOneSpanPerBatchLinkedToEachDelivery(t *testing.T) {
	tm := newTelemetry(t)
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs(), streamtest.WithAppOptions(runtime.WithObserver(tm.obs)))
	var inBatch []trace.SpanContext
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "rows", Broker: runtime.RabbitMQ, BatchSize: 3, BatchWait: time.Hour,
		Handlers: []runtime.Handler{runtime.HandleBatch[job]("Job", runtime.Policy{}, nil, func(ctx context.Context, jobs []job) error {
			inBatch = append(inBatch, trace.SpanContextFromContext(ctx))
			return nil
		})}})
	h.Start()
	for i := range 3 {
		if err := h.Broker().Publish(context.Background(), "rows", runtime.Message{ID: "m-" + strconv.Itoa(i), Type: "Job", Body: []byte(`{"id":1}`)}); err != nil {
			t.Fatal(err)
		}
	}
	h.Wait()
	batches, deliveries := tm.named("process batch rows"), tm.named("process rows")
	if len(batches) != 1 || len(deliveries) != 3 {
		t.Fatalf("%d batch spans and %d delivery spans, want 1 and 3:%s", len(batches), len(deliveries), describe(tm.spans.Ended()))
	}
	b := batches[0]
	if attr(b, "messaging.batch.message_count") != "3" {
		t.Errorf("batch span attributes %v", b.Attributes())
	}
	linked := map[trace.SpanID]bool{}
	for _, l := range b.Links() {
		linked[l.SpanContext.SpanID()] = true
	}
	for _, d := range deliveries {
		if !linked[d.SpanContext().SpanID()] {
			t.Errorf("the batch span is not linked to delivery span %s", d.SpanContext().SpanID())
		}
	}
	if len(inBatch) != 1 || inBatch[0].SpanID() != b.SpanContext().SpanID() {
		t.Errorf("the handler ran in span %v, want the batch's %s", inBatch, b.SpanContext().SpanID())
	}
	if m, ok := tm.find(t, otelstream.MetricHandlerDuration); ok {
		if n := histogramCount(t, m, map[string]string{"messaging.destination.name": "rows"}); n != 3 {
			t.Errorf("%d handler durations, want 3: one per message", n)
		}
	} else {
		t.Error("no handler duration metric")
	}
}
