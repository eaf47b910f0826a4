package pricing_test

import (
	"errors"
	"testing"
	"time"

	"github.com/streamgen/streamgen/examples/pricing"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

func newService() *pricing.Service {
	return &pricing.Service{Catalog: map[string]int64{"A-1": 250, "B-2": 1200}}
}

// The typed client gets its reply from the handler, in process.
func TestQuoteIsAnswered(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ)
	pricing.Mount(h.App(), h.Broker(), newService())
	h.Start()

	got, err := pricing.RequestQuote(t.Context(), h.Broker(), pricing.QuoteRequest{SKU: "A-1", Quantity: 4})
	if err != nil {
		t.Fatal(err)
	}
	if want := (pricing.Price{SKU: "A-1", Cents: 1000}); got != want {
		t.Fatalf("reply %+v, want %+v", got, want)
	}
}

// A SKU the catalog lacks is parked at once, and the caller is told
// where.
func TestUnknownSKUIsParkedAndTheCallerTold(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	pricing.Mount(h.App(), h.Broker(), newService())
	h.Start()

	_, err := pricing.RequestQuote(t.Context(), h.Broker(), pricing.QuoteRequest{SKU: "Z-9", Quantity: 1})
	if !errors.Is(err, runtime.ErrParked) {
		t.Fatalf("error %v, want runtime.ErrParked", err)
	}
	var re *runtime.RemoteError
	if !errors.As(err, &re) || re.DeadLetter != "pricing.quotes.dead" || re.Reason != `dead-lettered by the handler: no price for SKU "Z-9"` {
		t.Fatalf("remote error %+v, want parked on pricing.quotes.dead with the handler's reason", re)
	}
	if dead := h.Queue("pricing.quotes.dead"); len(dead) != 1 {
		t.Fatalf("pricing.quotes.dead holds %d messages, want the request", len(dead))
	}
}

// While the price feed is down the request is retried; the caller waits
// and gets the reply of the attempt that succeeds.
func TestQuoteRetriedWhileTheFeedIsDown(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	svc := newService()
	svc.FeedDown.Store(true)
	pricing.Mount(h.App(), h.Broker(), svc)
	h.Start()

	type result struct {
		p   pricing.Price
		err error
	}
	res := make(chan result, 1)
	go func() {
		p, err := pricing.RequestQuote(t.Context(), h.Broker(), pricing.QuoteRequest{SKU: "B-2", Quantity: 2})
		res <- result{p, err}
	}()
	testkit.Eventually(t, "the first attempt to fail", func() bool { return len(h.Deliveries("pricing.quotes")) == 1 })
	h.Wait()
	svc.FeedDown.Store(false)
	h.Advance(time.Second) // the retry's wait queue
	r := <-res
	if r.err != nil || r.p.Cents != 2400 {
		t.Fatalf("reply %+v, %v; want 2400 cents from the second attempt", r.p, r.err)
	}
	if ds := h.Deliveries("pricing.quotes"); len(ds) != 2 || ds[1].Attempt != 2 {
		t.Fatalf("%d deliveries, want the failed first attempt and the second", len(ds))
	}
}
