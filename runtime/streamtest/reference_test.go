package streamtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// The reference's job test: a job whose handler always fails with
// RetryAfter(30s) and max_attempts 5 is delivered exactly five times, 30
// seconds apart; its last copy carries retry count 4; then it is dropped
// with a warning naming the subscription, and nothing comes back.
func TestReferenceFailingJobIsDeliveredFiveTimesThenDropped(t *testing.T) {
	for _, tc := range []struct {
		kind runtime.BrokerKind
		sub  func(*calls) *runtime.Subscription
	}{
		{runtime.ZeroMQ, func(rec *calls) *runtime.Subscription {
			return &runtime.Subscription{Name: "jobs", Broker: runtime.ZeroMQ, Handlers: []runtime.Handler{
				failingJobs(rec, runtime.Policy{MaxAttempts: 5, OutRetry: "jobs"}),
			}}
		}},
		{runtime.RabbitMQ, func(rec *calls) *runtime.Subscription {
			return &runtime.Subscription{Name: "jobs", Broker: runtime.RabbitMQ, RetryDelays: []time.Duration{30 * time.Second}, Handlers: []runtime.Handler{
				failingJobs(rec, runtime.Policy{MaxAttempts: 5}),
			}}
		}},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			var rec calls
			h := streamtest.New(t, tc.kind)
			h.App().Mount(h.Broker(), tc.sub(&rec))
			h.Start()
			h.Publish("jobs", "Job", job{ID: 7}, runtime.WithMessageID("job-7"))
			h.Wait()
			start := h.Now()
			if n := rec.len(); n != 1 {
				t.Fatalf("after publishing: %d deliveries, want 1", n)
			}
			// The copy waits 30 seconds: one second less brings nothing.
			h.Advance(29 * time.Second)
			if n := rec.len(); n != 1 {
				t.Fatalf("29s later: %d deliveries, want still 1", n)
			}
			h.Advance(time.Second)
			for want := 2; want <= 5; want++ {
				if n := rec.len(); n != want {
					t.Fatalf("%v after the first delivery: %d deliveries, want %d", h.Now().Sub(start), n, want)
				}
				if want < 5 {
					h.Advance(30 * time.Second)
				}
			}
			// Nothing more, however long we wait.
			h.Advance(time.Hour)
			if n := rec.len(); n != 5 {
				t.Fatalf("an hour later: %d deliveries, want 5", n)
			}
			if n := h.Pending(); n != 0 {
				t.Errorf("%d timers still pending, want none", n)
			}

			ds := h.Deliveries("jobs")
			if got, want := attempts(ds), []int{1, 2, 3, 4, 5}; !slices.Equal(got, want) {
				t.Fatalf("attempts %v, want %v", got, want)
			}
			for i, d := range ds {
				if d.RetryCount() != i {
					t.Errorf("delivery %d carries retry count %d, want %d", i+1, d.RetryCount(), i)
				}
				if got := d.Time.Sub(start); got != time.Duration(i)*30*time.Second {
					t.Errorf("delivery %d came at +%v, want +%v", i+1, got, time.Duration(i)*30*time.Second)
				}
				if d.MessageID != "job-7" {
					t.Errorf("delivery %d has message id %q, want job-7", i+1, d.MessageID)
				}
			}
			if got := ds[4].Headers[runtime.RetryCountHeader]; got != "4" {
				t.Errorf("the last copy's %s header is %q, want \"4\"", runtime.RetryCountHeader, got)
			}
			wantKinds := []streamtest.VerdictKind{streamtest.VerdictRetry, streamtest.VerdictRetry, streamtest.VerdictRetry, streamtest.VerdictRetry, streamtest.VerdictDrop}
			if got := verdictKinds(ds); !slices.Equal(got, wantKinds) {
				t.Fatalf("verdicts %v, want %v", got, wantKinds)
			}
			for i, md := range rec.list() {
				if md.Attempt != i+1 || md.MaxAttempts != 5 || md.Subscription != "jobs" {
					t.Errorf("handler call %d got metadata %+v", i+1, md)
				}
			}
			requireWarning(t, h.Logs(), "message dropped", "jobs", "job-7", "failed on attempt 5 of 5: the job failed")
			if st := h.App().Stats(); len(st) != 1 || st[0].Delivered != 5 || st[0].Retried != 4 || st[0].Dropped != 1 {
				t.Errorf("metrics %+v, want 5 delivered, 4 retried, 1 dropped", st)
			}
		})
	}
}

// The reference's invoice test: a zero-amount invoice fails; with
// dead_letter "invoices.dead" and no max_attempts it reaches the handler
// mounted on "invoices.dead" after one delivery.
func TestReferenceZeroInvoiceReachesTheDeadLetterHandler(t *testing.T) {
	for _, kind := range []runtime.BrokerKind{runtime.ZeroMQ, runtime.RabbitMQ} {
		t.Run(string(kind), func(t *testing.T) {
			var sent, parked calls
			var parkedInvoices []invoice
			invoices := &runtime.Subscription{Name: "invoices", Broker: kind, Handlers: []runtime.Handler{
				runtime.Handle("Invoice", runtime.Policy{DeadLetter: "invoices.dead"},
					func(_ context.Context, inv *invoice, md runtime.Metadata) runtime.Outcome {
						sent.add(md)
						if inv.AmountCents == 0 {
							return runtime.OutcomeOf(errors.New("an invoice without an amount"))
						}
						return runtime.Ack()
					}),
			}}
			dead := &runtime.Subscription{Name: "invoices.dead", Broker: kind, Handlers: []runtime.Handler{
				runtime.Handle("Invoice", runtime.Policy{}, func(_ context.Context, inv *invoice, md runtime.Metadata) runtime.Outcome {
					parked.add(md)
					parkedInvoices = append(parkedInvoices, *inv)
					return runtime.Ack()
				}),
			}}
			h := streamtest.New(t, kind)
			h.App().Mount(h.Broker(), invoices, dead)
			h.Start()
			h.Publish("invoices", "Invoice", invoice{ID: 1, AmountCents: 1250}, runtime.WithMessageID("inv-1"))
			h.Publish("invoices", "Invoice", invoice{ID: 2}, runtime.WithMessageID("inv-2"))
			h.Wait()

			if got := attempts(h.Deliveries("invoices")); !slices.Equal(got, []int{1, 1}) {
				t.Fatalf("invoices delivered with attempts %v, want [1 1]", got)
			}
			pd := parked.list()
			if len(pd) != 1 || len(parkedInvoices) != 1 {
				t.Fatalf("the dead-letter handler got %d invoices, want 1", len(pd))
			}
			if parkedInvoices[0] != (invoice{ID: 2}) {
				t.Errorf("the dead-letter handler got %+v, want the zero-amount invoice", parkedInvoices[0])
			}
			md := pd[0]
			if md.Subscription != "invoices.dead" || md.MessageID != "inv-2" || md.Attempt != 1 {
				t.Errorf("dead-letter metadata %+v, want subscription invoices.dead, message inv-2, attempt 1", md)
			}
			if got := md.Headers[runtime.HeaderDeadLetterSource]; got != "invoices" {
				t.Errorf("%s = %q, want invoices", runtime.HeaderDeadLetterSource, got)
			}
			if got := md.Headers[runtime.HeaderDeadLetterReason]; got != "failed: an invoice without an amount" {
				t.Errorf("%s = %q", runtime.HeaderDeadLetterReason, got)
			}
			if got := md.Headers[runtime.HeaderDeadLetterAttempts]; got != "1" {
				t.Errorf("%s = %q, want 1", runtime.HeaderDeadLetterAttempts, got)
			}
			if got := md.Headers[runtime.HeaderDeadLetterTime]; got != "2025-01-01T00:00:00.000Z" {
				t.Errorf("%s = %q, want the fake clock's time", runtime.HeaderDeadLetterTime, got)
			}
			requireWarning(t, h.Logs(), "message parked", "invoices", "inv-2", "an invoice without an amount")
			if n := len(h.Queue("invoices.dead")); n != 0 {
				t.Errorf("%d messages left in invoices.dead, which has a consumer", n)
			}
		})
	}
}

// Without a consumer on the dead-letter queue the dead letters wait there,
// for the test to read.
func TestDeadLettersWaitInAQueueNobodyConsumes(t *testing.T) {
	for _, kind := range []runtime.BrokerKind{runtime.ZeroMQ, runtime.RabbitMQ} {
		t.Run(string(kind), func(t *testing.T) {
			h := streamtest.New(t, kind)
			h.App().Mount(h.Broker(), &runtime.Subscription{Name: "invoices", Handlers: []runtime.Handler{
				runtime.Handle("Invoice", runtime.Policy{DeadLetter: "invoices.dead"}, func(context.Context, *invoice, runtime.Metadata) runtime.Outcome {
					return runtime.OutcomeOf(errors.New("no amount"))
				}),
			}})
			h.Start()
			h.Publish("invoices", "Invoice", invoice{ID: 3}, runtime.WithMessageID("inv-3"), runtime.WithHeader("tenant", "acme"))
			h.Wait()
			dead := h.Queue("invoices.dead")
			if len(dead) != 1 {
				t.Fatalf("invoices.dead holds %d messages, want 1", len(dead))
			}
			m := dead[0]
			var got invoice
			if err := json.Unmarshal(m.Body, &got); err != nil || got.ID != 3 {
				t.Fatalf("dead letter body %q (%v), want invoice 3", m.Body, err)
			}
			if m.ID != "inv-3" || m.Type != "Invoice" || m.ContentType != "application/json" {
				t.Errorf("dead letter id/type/content type %q/%q/%q", m.ID, m.Type, m.ContentType)
			}
			if m.Headers["tenant"] != "acme" {
				t.Errorf("the dead letter lost the header tenant: %v", m.Headers)
			}
			if m.Headers[runtime.HeaderDeadLetterPoison] != "false" || m.Headers[runtime.HeaderDeadLetterReason] != "failed: no amount" {
				t.Errorf("dead letter headers %v", m.Headers)
			}
		})
	}
}
