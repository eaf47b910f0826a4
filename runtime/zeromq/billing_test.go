package zeromq_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// The billing service of the reference guide, over real sockets: a job
// worker that retries a failed job into its own queue after 30 seconds,
// at most five deliveries; an invoice worker that parks an invoice without
// an amount on invoices.dead, where another handler reads it.

const billingBackoff = 30 * time.Second

type billingJob struct {
	ID uint64 `json:"id"`
}

type invoice struct {
	ID          uint64 `json:"id"`
	AmountCents uint64 `json:"amount_cents"`
}

type billing struct {
	mu       sync.Mutex
	jobs     []runtime.Metadata
	invoices []runtime.Metadata
	parked   []invoice
}

func (b *billing) subscriptions() []*runtime.Subscription {
	work := runtime.Handle("Job", runtime.Policy{MaxAttempts: 5, OutRetry: "jobs"},
		func(_ context.Context, job *billingJob, md runtime.Metadata) runtime.Outcome {
			b.mu.Lock()
			b.jobs = append(b.jobs, md)
			b.mu.Unlock()
			return runtime.Retry().After(billingBackoff).Because(errors.New("the job failed"))
		})
	sendInvoice := runtime.Handle("Invoice", runtime.Policy{DeadLetter: "invoices.dead"},
		func(_ context.Context, inv *invoice, md runtime.Metadata) runtime.Outcome {
			b.mu.Lock()
			b.invoices = append(b.invoices, md)
			b.mu.Unlock()
			if inv.AmountCents == 0 {
				return runtime.Retry().Because(errors.New("an invoice without an amount"))
			}
			return runtime.Ack()
		})
	park := runtime.Handle("Invoice", runtime.Policy{},
		func(_ context.Context, inv *invoice, _ runtime.Metadata) runtime.Outcome {
			b.mu.Lock()
			b.parked = append(b.parked, *inv)
			b.mu.Unlock()
			return runtime.Ack()
		})
	return []*runtime.Subscription{
		{Name: "jobs", Broker: runtime.ZeroMQ, Handlers: []runtime.Handler{work}},
		{Name: "invoices", Broker: runtime.ZeroMQ, Handlers: []runtime.Handler{sendInvoice}},
		{Name: "invoices.dead", Broker: runtime.ZeroMQ, Handlers: []runtime.Handler{park}},
	}
}

func (b *billing) snapshot() (jobs, invoices []runtime.Metadata, parked []invoice) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]runtime.Metadata(nil), b.jobs...), append([]runtime.Metadata(nil), b.invoices...), append([]invoice(nil), b.parked...)
}

func startBilling(t *testing.T) (*billing, *zeromq.Broker, *streamtest.Clock, *streamtest.LogRecorder, *runtime.App) {
	t.Helper()
	clock := newClock()
	logs := streamtest.NewLogRecorder(nil)
	svc := &billing{}
	app := runtime.NewApp("billing", runtime.WithClock(clock), runtime.WithLogger(logs.Logger()))
	zq := zeromq.New(
		zeromq.Queue("jobs", zeromq.Bind(freeEndpoint(t))),
		zeromq.Queue("invoices", zeromq.Bind(freeEndpoint(t))),
		zeromq.Queue("invoices.dead", zeromq.Bind(freeEndpoint(t))),
	)
	app.Mount(zq, svc.subscriptions()...)
	streamtest.RunApp(t, app)
	return svc, zq, clock, logs, app
}

func TestBillingJobIsDeliveredFiveTimesThenDropped(t *testing.T) {
	testkit.NoLeaks(t)
	svc, zq, clock, logs, _ := startBilling(t)
	if err := runtime.Publish(context.Background(), zq, runtime.Queue("jobs"), "Job", billingJob{ID: 7}, runtime.WithMessageID("job-7")); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 5; n++ {
		testkit.Eventually(t, "a delivery", func() bool { jobs, _, _ := svc.snapshot(); return len(jobs) == n })
		if n < 5 {
			testkit.Eventually(t, "the copy waiting 30s", func() bool {
				p := clock.PendingDelays()
				return len(p) == 1 && p[0] == billingBackoff
			})
			clock.Advance(billingBackoff)
		}
	}
	testkit.Eventually(t, "the drop", func() bool { return len(logs.Containing("message dropped")) == 1 })
	jobs, _, _ := svc.snapshot()
	if len(jobs) != 5 || clock.Pending() != 0 {
		t.Fatalf("%d deliveries and %d copies waiting, want 5 and 0", len(jobs), clock.Pending())
	}
	for i, md := range jobs {
		if md.Attempt != i+1 {
			t.Fatalf("delivery %d has attempt %d", i+1, md.Attempt)
		}
	}
	if c := jobs[4].Headers[runtime.RetryCountHeader]; c != "4" {
		t.Fatalf("last copy carries count %q, want 4", c)
	}
	drop := logs.Containing("message dropped")[0]
	if drop.Attrs["subscription"] != "jobs" || drop.Attrs["message_id"] != "job-7" || !strings.Contains(drop.Attrs["reason"], "the job failed") {
		t.Fatalf("drop line = %s", drop)
	}
}

func TestBillingZeroAmountInvoiceIsParkedAfterOneDelivery(t *testing.T) {
	testkit.NoLeaks(t)
	svc, zq, _, logs, app := startBilling(t)
	if err := runtime.Publish(context.Background(), zq, runtime.Queue("invoices"), "Invoice", invoice{ID: 3, AmountCents: 0}); err != nil {
		t.Fatal(err)
	}
	if err := runtime.Publish(context.Background(), zq, runtime.Queue("invoices"), "Invoice", invoice{ID: 4, AmountCents: 990}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the invoice parked", func() bool { _, _, parked := svc.snapshot(); return len(parked) == 1 })
	testkit.Eventually(t, "both invoices settled", func() bool {
		for _, s := range app.Stats() {
			if s.Subscription == "invoices" {
				return s.Acked+s.Parked == 2
			}
		}
		return false
	})
	_, invoices, parked := svc.snapshot()
	if parked[0] != (invoice{ID: 3}) {
		t.Fatalf("parked %+v, want invoice 3", parked)
	}
	if len(invoices) != 2 {
		t.Fatalf("%d invoice deliveries, want 2 (one each)", len(invoices))
	}
	// The counter moves just before the line is logged.
	testkit.Eventually(t, "the park line", func() bool { return len(logs.Containing("message parked")) > 0 })
	if len(logs.Containing("message parked")) != 1 {
		t.Fatalf("logs:\n%s", logs)
	}
}
