package pricing_test

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/examples/internal/demo"
	"github.com/streamgen/streamgen/examples/pricing"
	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// The generated Mount and typed client on RabbitMQ, under queue names of
// this test's own: a quote answered over direct reply-to, by the same
// Broker that runs the service; a request retried while the feed is down,
// answered by its second attempt; an unknown SKU parked, the caller told
// where.
func TestPricingOnRabbitMQ(t *testing.T) {
	url := brokerurl.RabbitMQ()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("RabbitMQ does not answer at %s (%v): start one with rabbitmq-server -detached, or point STREAMGEN_RABBITMQ_URL at one", rabbitmq.RedactURL(url), err)
	}
	_ = conn.Close()
	prefix := "test-pricing-" + rand.Text()[:10] + "."
	b := demo.Prefix(rabbitmq.New(url, rabbitmq.WithConnectionName("pricing-test")), prefix)
	svc := &pricing.Service{Catalog: map[string]int64{"A-1": 250}}
	app := runtime.NewApp("pricing-test", runtime.WithLogger(streamtest.NewLogRecorder(nil).Logger()))
	pricing.Mount(app, b, svc)
	stop := streamtest.RunApp(t, app)
	t.Cleanup(func() {
		_ = stop()
		if err := demo.Delete(url, rabbitmq.QueueNames(b.Subscriptions()...)); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if got, err := pricing.RequestQuote(ctx, b, pricing.QuoteRequest{SKU: "A-1", Quantity: 3}); err != nil || got != (pricing.Price{SKU: "A-1", Cents: 750}) {
		t.Fatalf("RequestQuote = %+v, %v; want 750 cents", got, err)
	}

	svc.FeedDown.Store(true)
	done := make(chan error, 1)
	go func() {
		got, err := pricing.RequestQuote(ctx, b, pricing.QuoteRequest{SKU: "A-1", Quantity: 1})
		if err == nil && got.Cents != 250 {
			err = errors.New("a wrong price")
		}
		done <- err
	}()
	testkit.Eventually(t, "the first attempt to fail and be retried", func() bool {
		for _, st := range app.Stats() {
			if st.Subscription == b.Name("pricing.quotes") && st.Retried == 1 {
				return true
			}
		}
		return false
	})
	svc.FeedDown.Store(false)
	if err := <-done; err != nil {
		t.Fatalf("the request retried while the feed was down: %v", err)
	}

	_, err = pricing.RequestQuote(ctx, b, pricing.QuoteRequest{SKU: "Z-9", Quantity: 1})
	var re *runtime.RemoteError
	if !errors.Is(err, runtime.ErrParked) || !errors.As(err, &re) || re.DeadLetter != prefix+"pricing.quotes.dead" {
		t.Fatalf("RequestQuote of an unknown SKU = %v, want it parked on %spricing.quotes.dead", err, prefix)
	}
}
