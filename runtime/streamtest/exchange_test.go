package streamtest_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// recorder is a handler of jobs that records the message ids it sees and
// returns what outcome says.
func recorder(rec *calls, policy runtime.Policy, outcome runtime.Outcome) runtime.Handler {
	return runtime.Handle("Job", policy, func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
		rec.add(md)
		return outcome
	})
}

func ids(c *calls) []string {
	var out []string
	for _, md := range c.list() {
		out = append(out, md.MessageID)
	}
	slices.Sort(out)
	return out
}

// publishTo publishes a job with id id through the harness's broker.
func publishTo(t *testing.T, h *streamtest.Harness, to runtime.Destination, id string, opts ...runtime.PublishOption) error {
	t.Helper()
	return runtime.Publish(context.Background(), h.Broker(), to, "Job", job{ID: 1}, append([]runtime.PublishOption{runtime.WithMessageID(id)}, opts...)...)
}

// The harness routes through exchanges as RabbitMQ does: topic patterns,
// direct keys, fanout, the unroutable error, and retries that stay with
// their own queue.
func TestHarnessRoutesThroughExchanges(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ)
	var star, hash, direct, fanOK, fanFail calls
	h.App().Mount(h.Broker(),
		&runtime.Subscription{Name: "star", Exchange: "orders", Bindings: []string{"order.*"}, Handlers: []runtime.Handler{recorder(&star, runtime.Policy{}, runtime.Ack())}},
		&runtime.Subscription{Name: "hash", Exchange: "orders", ExchangeType: runtime.TopicExchange, Bindings: []string{"order.#"}, Handlers: []runtime.Handler{recorder(&hash, runtime.Policy{}, runtime.Ack())}},
		&runtime.Subscription{Name: "direct", Exchange: "mail", ExchangeType: runtime.DirectExchange, Bindings: []string{"welcome"}, Handlers: []runtime.Handler{recorder(&direct, runtime.Policy{}, runtime.Ack())}},
		&runtime.Subscription{Name: "fan.ok", Exchange: "events", ExchangeType: runtime.FanoutExchange, Handlers: []runtime.Handler{recorder(&fanOK, runtime.Policy{}, runtime.Ack())}},
		&runtime.Subscription{Name: "fan.fail", Exchange: "events", ExchangeType: runtime.FanoutExchange, RetryDelays: []time.Duration{time.Second},
			Handlers: []runtime.Handler{recorder(&fanFail, runtime.Policy{MaxAttempts: 3, DeadLetter: "fan.fail.dl"}, runtime.Retry().Because(errJobFailed))}},
	)
	h.Start()
	for _, p := range []struct {
		to runtime.Destination
		id string
	}{
		{runtime.Exchange("orders", "order.placed"), "placed"},
		{runtime.Exchange("orders", "order.placed.eu"), "placed.eu"},
		{runtime.Exchange("orders", "order"), "order"},
		{runtime.Exchange("mail", "welcome"), "welcome"},
		{runtime.Exchange("events", "whatever"), "event"},
	} {
		if err := publishTo(t, h, p.to, p.id); err != nil {
			t.Fatalf("publish %s: %v", p.id, err)
		}
	}
	// WithRoutingKey overrides the key of the destination.
	if err := publishTo(t, h, runtime.Exchange("orders", "invoice.sent"), "overridden", runtime.WithRoutingKey("order.cancelled")); err != nil {
		t.Fatalf("publish with a routing key: %v", err)
	}
	// No binding matches: an error, unless the message allows it.
	for _, to := range []runtime.Destination{runtime.Exchange("orders", "invoice.sent"), runtime.Exchange("mail", "order.*")} {
		err := publishTo(t, h, to, "lost")
		if !errors.Is(err, streamtest.ErrUnroutable) || !strings.Contains(err.Error(), "runtime.AllowUnroutable()") {
			t.Errorf("publish to %s: %v, want ErrUnroutable", to, err)
		}
	}
	if err := publishTo(t, h, runtime.Exchange("orders", "invoice.sent"), "dropped", runtime.AllowUnroutable()); err != nil {
		t.Errorf("an unroutable message that allows it: %v", err)
	}
	if err := publishTo(t, h, runtime.Exchange("nowhere", "x"), "x"); err == nil || !strings.Contains(err.Error(), `no exchange "nowhere"`) {
		t.Errorf("publish to an exchange nobody declared: %v", err)
	}
	h.Wait()
	h.Advance(time.Second)
	h.Advance(time.Second)

	for _, tc := range []struct {
		name string
		c    *calls
		want []string
	}{
		{"order.*", &star, []string{"overridden", "placed"}},
		{"order.#", &hash, []string{"order", "overridden", "placed", "placed.eu"}},
		{"direct", &direct, []string{"welcome"}},
		{"fanout, acked", &fanOK, []string{"event"}},
		{"fanout, failing", &fanFail, []string{"event", "event", "event"}},
	} {
		if got := ids(tc.c); !slices.Equal(got, tc.want) {
			t.Errorf("%s saw %q, want %q", tc.name, got, tc.want)
		}
	}
	if dl := h.Queue("fan.fail.dl"); len(dl) != 1 || dl[0].ID != "event" {
		t.Errorf("fan.fail.dl holds %v, want the event", dl)
	}
}

func TestHarnessBindWithoutSubscriptions(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ)
	if err := h.Broker().Bind("orders", "", "audit", "order.#"); err != nil {
		t.Fatal(err)
	}
	if err := h.Broker().Bind("orders", runtime.FanoutExchange, "other"); err == nil || !strings.Contains(err.Error(), "exchange orders exists as topic, not fanout") {
		t.Errorf("Bind with another type: %v", err)
	}
	if err := publishTo(t, h, runtime.Exchange("orders", "order.placed"), "o-1"); err != nil {
		t.Fatal(err)
	}
	if q := h.Queue("audit"); len(q) != 1 || q[0].ID != "o-1" || q[0].Exchange != "orders" {
		t.Errorf("audit holds %+v", q)
	}
}

func TestHarnessZeroMQRefusesExchanges(t *testing.T) {
	h := streamtest.New(t, runtime.ZeroMQ)
	if err := publishTo(t, h, runtime.Exchange("orders", "order.placed"), "o-1"); err == nil || !strings.Contains(err.Error(), "exchanges and routing keys are for rabbitmq") {
		t.Errorf("publish to an exchange on zeromq: %v", err)
	}
}
