package orders_test

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/examples/orders"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// start runs the orders service in process, on the emulated RabbitMQ broker
// with a fake clock, mounted by the generated Mount.
func start(t *testing.T) *streamtest.Harness {
	t.Helper()
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithAppName("orders"))
	orders.Mount(h.App(), h.Broker())
	h.Start()
	return h
}

func stats(t *testing.T, h *streamtest.Harness) runtime.SubscriptionStats {
	t.Helper()
	for _, s := range h.App().Stats() {
		if s.Subscription == "orders.received" {
			return s
		}
	}
	t.Fatal("no counters for orders.received")
	return runtime.SubscriptionStats{}
}

// parked returns the message with id in orders.parked, failing the test
// when there is none.
func parked(t *testing.T, h *streamtest.Harness, id string) runtime.Message {
	t.Helper()
	for _, m := range h.Queue("orders.parked") {
		if m.ID == id {
			return m
		}
	}
	t.Fatalf("message %s is not in orders.parked (%d messages there)", id, len(h.Queue("orders.parked")))
	return runtime.Message{}
}

func wantHeaders(t *testing.T, m runtime.Message, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := m.Headers[k]; got != v {
			t.Errorf("parked %s: header %s = %q, want %q", m.ID, k, got, v)
		}
	}
}

// An order whose payment always fails is delivered five times, waiting
// 500ms, 1s, 2s and 2s in the ladder's wait queues, then parked with the
// reason in its headers.
func TestOrderThatKeepsFailingWalksTheLadderAndIsParked(t *testing.T) {
	h := start(t)
	if err := orders.PublishOrderPlaced(t.Context(), h.Broker(), orders.OrderPlaced{ID: "o-3", TotalCents: 4200, PaymentFailures: 99}, runtime.WithMessageID("o-3")); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	begin := h.Now()
	h.Advance(499 * time.Millisecond)
	if n := len(h.Deliveries("orders.received")); n != 1 {
		t.Fatalf("before the first step of the ladder ends: %d deliveries, want 1", n)
	}
	h.Advance(time.Hour)

	ds := h.Deliveries("orders.received")
	if len(ds) != 5 {
		t.Fatalf("%d deliveries, want 5", len(ds))
	}
	wantAt := []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond, 3500 * time.Millisecond, 5500 * time.Millisecond}
	wantVia := []string{"orders.received.retry.500ms", "orders.received.retry.1s", "orders.received.retry.2s", "orders.received.retry.2s"}
	for i, d := range ds {
		if d.Attempt != i+1 || d.MessageType != "OrderPlaced" {
			t.Errorf("delivery %d: attempt %d type %q", i+1, d.Attempt, d.MessageType)
		}
		if at := d.Time.Sub(begin); at != wantAt[i] {
			t.Errorf("delivery %d came at +%v, want +%v", i+1, at, wantAt[i])
		}
		if i < 4 && (d.Verdict.Kind != streamtest.VerdictRetry || d.Verdict.Queue != wantVia[i]) {
			t.Errorf("delivery %d: %v via %q, want a retry via %s", i+1, d.Verdict.Kind, d.Verdict.Queue, wantVia[i])
		}
	}
	if v := ds[4].Verdict; v.Kind != streamtest.VerdictPark || v.Queue != "orders.parked" {
		t.Fatalf("the fifth delivery: %v to %q, want park on orders.parked", v.Kind, v.Queue)
	}
	m := parked(t, h, "o-3")
	wantHeaders(t, m, map[string]string{
		runtime.HeaderDeadLetterReason:   "failed on attempt 5 of 5: order o-3: the payment service is unavailable",
		runtime.HeaderDeadLetterSource:   "orders.received",
		runtime.HeaderDeadLetterAttempts: "5",
		runtime.HeaderDeadLetterPoison:   "false",
	})
	if m.Type != "OrderPlaced" {
		t.Errorf("the parked copy has type %q, want OrderPlaced", m.Type)
	}
	if _, ok := m.Headers[runtime.RetryCountHeader]; ok {
		t.Errorf("the parked copy carries %s; a parked copy starts a fresh count", runtime.RetryCountHeader)
	}
	if s := stats(t, h); s.Delivered != 5 || s.Retried != 4 || s.Parked != 1 || s.Acked != 0 {
		t.Errorf("counters %+v, want 5 delivered, 4 retried, 1 parked", s)
	}
}

func TestOrderThatFailsTwiceIsConfirmedOnTheThirdDelivery(t *testing.T) {
	h := start(t)
	if err := orders.PublishOrderPlaced(t.Context(), h.Broker(), orders.OrderPlaced{ID: "o-2", TotalCents: 800, PaymentFailures: 2}, runtime.WithMessageID("o-2")); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	h.Advance(time.Hour)
	ds := h.Deliveries("orders.received")
	kinds := make([]streamtest.VerdictKind, len(ds))
	for i, d := range ds {
		kinds[i] = d.Verdict.Kind
	}
	if want := []streamtest.VerdictKind{streamtest.VerdictRetry, streamtest.VerdictRetry, streamtest.VerdictAck}; !slices.Equal(kinds, want) {
		t.Fatalf("verdicts %v, want %v", kinds, want)
	}
	if n := len(h.Queue("orders.parked")); n != 0 {
		t.Errorf("%d messages parked, want none", n)
	}
}

// Place returns runtime.DeadLetter for an order without a total: it is
// parked after one delivery, whatever max_attempts says.
func TestOrderWithoutTotalIsParkedAtOnce(t *testing.T) {
	h := start(t)
	if err := orders.PublishOrderPlaced(t.Context(), h.Broker(), orders.OrderPlaced{ID: "o-4", Customer: "ada"}, runtime.WithMessageID("o-4")); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	h.Advance(time.Hour)
	ds := h.Deliveries("orders.received")
	if len(ds) != 1 || ds[0].Verdict.Kind != streamtest.VerdictPark {
		t.Fatalf("deliveries %+v, want one, parked", ds)
	}
	wantHeaders(t, parked(t, h, "o-4"), map[string]string{
		runtime.HeaderDeadLetterReason:   "dead-lettered by the handler: order o-4: the order has no total",
		runtime.HeaderDeadLetterAttempts: "1",
		runtime.HeaderDeadLetterPoison:   "false",
	})
}

// Both message types share the queue; the AMQP type picks the handler, and
// each type has its own policy.
func TestCancellationIsDispatchedByTypeWithItsOwnPolicy(t *testing.T) {
	h := start(t)
	if err := orders.PublishOrderCancelled(t.Context(), h.Broker(), orders.OrderCancelled{ID: "o-1", Reason: "changed my mind"}, runtime.WithMessageID("c-1")); err != nil {
		t.Fatal(err)
	}
	if err := orders.PublishOrderPlaced(t.Context(), h.Broker(), orders.OrderPlaced{ID: "o-5", TotalCents: 100}, runtime.WithMessageID("o-5")); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	got := map[string]streamtest.Verdict{}
	for _, d := range h.Deliveries("orders.received") {
		got[d.MessageType] = d.Verdict
	}
	if v := got["OrderCancelled"]; v.Kind != streamtest.VerdictAck || v.MaxAttempts != 3 || v.MessageType != "OrderCancelled" {
		t.Errorf("the cancellation: %+v, want acked by the OrderCancelled handler with max_attempts 3", v)
	}
	if v := got["OrderPlaced"]; v.Kind != streamtest.VerdictAck || v.MaxAttempts != 5 {
		t.Errorf("the order: %+v, want acked by the OrderPlaced handler with max_attempts 5", v)
	}
}

// A type no handler takes is poison: parked at once, never retried.
func TestUnknownTypeIsPoison(t *testing.T) {
	h := start(t)
	if err := runtime.Publish(t.Context(), h.Broker(), runtime.Queue("orders.received"), "OrderRefunded", map[string]string{"id": "o-1"}, runtime.WithMessageID("r-1")); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	h.Advance(time.Hour)
	if ds := h.Deliveries("orders.received"); len(ds) != 1 || ds[0].Verdict.Kind != streamtest.VerdictPark || !ds[0].Verdict.Poison {
		t.Fatalf("deliveries %+v, want one, parked as poison", ds)
	}
	m := parked(t, h, "r-1")
	wantHeaders(t, m, map[string]string{runtime.HeaderDeadLetterPoison: "true", runtime.HeaderDeadLetterAttempts: "1"})
	if r := m.Headers[runtime.HeaderDeadLetterReason]; !strings.Contains(r, `no handler for message type "OrderRefunded"`) {
		t.Errorf("poison reason %q", r)
	}
}

func TestHandlersLogWhatTheyDo(t *testing.T) {
	logs := streamtest.NewLogRecorder(nil)
	previous := slog.Default()
	slog.SetDefault(logs.Logger())
	t.Cleanup(func() { slog.SetDefault(previous) })

	h := start(t)
	if err := orders.PublishOrderPlaced(t.Context(), h.Broker(), orders.OrderPlaced{ID: "o-6", Customer: "ada", TotalCents: 1999, PaymentFailures: 1}, runtime.WithMessageID("o-6")); err != nil {
		t.Fatal(err)
	}
	if err := orders.PublishOrderCancelled(t.Context(), h.Broker(), orders.OrderCancelled{ID: "o-7", Reason: "too slow"}, runtime.WithMessageID("c-7")); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	h.Advance(time.Second)
	failed := logs.Find(slog.LevelWarn, "payment failed")
	if len(failed) != 1 || failed[0].Attr("message_id") != "o-6" || failed[0].Attr("attempt") != "1" || failed[0].Attr("max_attempts") != "5" {
		t.Errorf("payment failed lines %v", failed)
	}
	confirmed := logs.Find(slog.LevelInfo, "order confirmed")
	if len(confirmed) != 1 || confirmed[0].Attr("attempt") != "2" || confirmed[0].Attr("total") != "19.99" || confirmed[0].Attr("customer") != "ada" {
		t.Errorf("order confirmed lines %v", confirmed)
	}
	cancelled := logs.Find(slog.LevelInfo, "order cancelled")
	if len(cancelled) != 1 || cancelled[0].Attr("order") != "o-7" || cancelled[0].Attr("reason") != "too slow" || cancelled[0].Attr("max_attempts") != "3" {
		t.Errorf("order cancelled lines %v", cancelled)
	}
}

// Below the default logger's level the handlers derive no logger per
// message: they give slog.LogAttrs the message's attributes at the call.
func TestHandlersDeriveNoLoggerPerMessage(t *testing.T) {
	testkit.RestoreDefaultLogger(t)
	counter := &testkit.CountingHandler{Level: slog.LevelWarn}
	slog.SetDefault(slog.New(counter))
	ctx := t.Context()
	md := runtime.Metadata{Subscription: "orders.received", MessageID: "o-1", Attempt: 1, MaxAttempts: 5}
	order := orders.OrderPlaced{ID: "o-1", Customer: "ada", TotalCents: 100, PaymentFailures: 1}
	if err := orders.Place(ctx, order, md); err == nil {
		t.Fatal("the first delivery of an order that fails once succeeded")
	}
	md.Attempt = 2
	if err := orders.Place(ctx, order, md); err != nil {
		t.Fatal(err)
	}
	md.MessageID = "c-1"
	if err := orders.Cancel(ctx, orders.OrderCancelled{ID: "o-1", Reason: "changed my mind"}, md); err != nil {
		t.Fatal(err)
	}
	if counter.Derived() != 0 || counter.Handled() != 1 {
		t.Errorf("%d loggers derived and %d records handled, want none derived and only the failed payment's warning handled", counter.Derived(), counter.Handled())
	}
}

// An event is published once, to the orders exchange: orders.received and
// orders.audit each get a copy. The retries of orders.received go back
// only to it, so the audit sees the order once.
func TestEachBoundQueueGetsItsOwnCopy(t *testing.T) {
	h := start(t)
	if err := orders.PublishOrderPlaced(t.Context(), h.Broker(), orders.OrderPlaced{ID: "o-3", TotalCents: 4200, PaymentFailures: 99}, runtime.WithMessageID("o-3")); err != nil {
		t.Fatal(err)
	}
	if err := orders.PublishOrderCancelled(t.Context(), h.Broker(), orders.OrderCancelled{ID: "o-3", Reason: "too slow"}, runtime.WithMessageID("c-3")); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	h.Advance(time.Hour)
	if n := len(h.Deliveries("orders.received")); n != 5+1 {
		t.Errorf("%d deliveries on orders.received, want 5 of o-3 and 1 of c-3", n)
	}
	var audited []string
	for _, d := range h.Deliveries("orders.audit") {
		if d.Verdict.Kind != streamtest.VerdictAck {
			t.Errorf("the audit's delivery of %s: %v", d.MessageID, d.Verdict.Kind)
		}
		audited = append(audited, d.MessageID)
	}
	if want := []string{"o-3", "c-3"}; !slices.Equal(audited, want) {
		t.Errorf("the audit got %v, want %v", audited, want)
	}
	// A routing key no queue is bound for is the publisher's error.
	err := orders.PublishOrderPlaced(t.Context(), h.Broker(), orders.OrderPlaced{ID: "o-9", TotalCents: 1}, runtime.WithRoutingKey("refund.placed"))
	if err == nil {
		t.Error("an order published with a routing key nothing is bound for was accepted")
	}
}
