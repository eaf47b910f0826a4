package otelstream_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/otelstream"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// runUntilIdle runs app until cond holds, then stops it cleanly.
func runUntil(t *testing.T, app *runtime.App, what string, cond func() bool, publish func()) {
	t.Helper()
	stop := streamtest.RunApp(t, app)
	publish()
	testkit.Eventually(t, what, cond)
	if err := stop(); err != nil {
		t.Fatalf("the App did not stop cleanly: %v", err)
	}
}

// On RabbitMQ: the publish, both attempts and the dead letter are one
// chain (the trace context travels on the retry copy through the wait
// queue, and on the dead letter), and the broker's confirm of the publish,
// the retry copy and the dead letter are measured.
func TestRabbitMQ(t *testing.T) {
	testkit.NoLeaks(t)
	conn := testkit.DialRabbitMQ(t, testkit.RabbitMQURL())
	q := testkit.UniqueName("otelstream")
	t.Cleanup(func() {
		ch, err := conn.Channel()
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer ch.Close()
		for _, name := range []string{q, q + ".retry", q + ".dead", q + ".suspect"} {
			if _, err := ch.QueueDelete(name, false, false, false); err != nil {
				t.Errorf("delete %s: %v", name, err)
			}
		}
	})
	tm := newTelemetry(t)
	rb := rabbitmq.New(testkit.RabbitMQURL(), rabbitmq.WithConnectionName("streamgen-test-otel-"+q))
	app := runtime.NewApp("otelstream-test", runtime.WithObserver(tm.obs), runtime.WithShutdownTimeout(20*time.Second))
	jobs, dead := failing(runtime.RabbitMQ, q, 2, 50*time.Millisecond)
	app.Mount(rb, jobs, dead)
	ctx, caller := tm.tracer.Start(context.Background(), "caller")
	runUntil(t, app, "the dead letter to be read back", func() bool { return len(tm.named("process "+q+".dead")) == 1 }, func() {
		if err := runtime.Publish(ctx, tm.obs.Publisher(rb), runtime.Queue(q), "Job", job{ID: 1}, runtime.WithMessageID("m-1")); err != nil {
			t.Fatal(err)
		}
		caller.End()
	})

	sends, attempts, deads := tm.named("send "+q), tm.named("process "+q), tm.named("process "+q+".dead")
	if len(sends) != 1 || len(attempts) != 2 || len(deads) != 1 {
		t.Fatalf("spans:%s", describe(tm.spans.Ended()))
	}
	requireChain(t, tm.named("caller")[0], sends[0], attempts[0], attempts[1], deads[0])
	for _, s := range attempts {
		if attr(s, "messaging.system") != "rabbitmq" || attr(s, "messaging.destination.name") != q {
			t.Errorf("span %s: %v", s.Name(), s.Attributes())
		}
	}
	// A publish to a queue goes through the default exchange, "", with the
	// queue's name as its routing key.
	if s := sends[0]; attr(s, "messaging.system") != "rabbitmq" || !hasAttr(s, "messaging.destination.name") || attr(s, "messaging.destination.name") != "" ||
		attr(s, "messaging.rabbitmq.destination.routing_key") != q {
		t.Errorf("span %s: %v", s.Name(), s.Attributes())
	}
	if n := histogramCount(t, tm.metric(t, otelstream.MetricConfirmDuration), map[string]string{"messaging.system": "rabbitmq"}); n != 3 {
		t.Errorf("%d confirms measured, want 3: the publish, the retry copy and the dead letter", n)
	}
}

// On ZeroMQ: the chain holds across a retry copy that waited in memory,
// which is gauged while it waits.
func TestZeroMQ(t *testing.T) {
	testkit.NoLeaks(t)
	q := testkit.UniqueName("otelstream")
	zb := zeromq.New(zeromq.Queue(q, zeromq.Bind(freeEndpoint(t))), zeromq.Queue(q+".dead", zeromq.Bind(freeEndpoint(t))))
	tm := newTelemetry(t)
	app := runtime.NewApp("otelstream-test", runtime.WithObserver(tm.obs))
	jobs, dead := failing(runtime.ZeroMQ, q, 2, 300*time.Millisecond)
	app.Mount(zb, jobs, dead)
	ctx, caller := tm.tracer.Start(context.Background(), "caller")
	sawWaiting := false
	runUntil(t, app, "the dead letter to be read back", func() bool {
		if m, ok := tm.find(t, otelstream.MetricCopiesWaiting); ok {
			if v, _ := gaugeValue(t, m, map[string]string{"messaging.destination.name": q, "messaging.system": "zeromq"}); v == 1 {
				sawWaiting = true
			}
		}
		return len(tm.named("process "+q+".dead")) == 1
	}, func() {
		if err := runtime.Publish(ctx, tm.obs.Publisher(zb), runtime.Queue(q), "Job", job{ID: 1}, runtime.WithMessageID("m-1")); err != nil {
			t.Fatal(err)
		}
		caller.End()
	})

	sends, attempts, deads := tm.named("send "+q), tm.named("process "+q), tm.named("process "+q+".dead")
	if len(sends) != 1 || len(attempts) != 2 || len(deads) != 1 {
		t.Fatalf("spans:%s", describe(tm.spans.Ended()))
	}
	requireChain(t, tm.named("caller")[0], sends[0], attempts[0], attempts[1], deads[0])
	if attr(attempts[1], "messaging.system") != "zeromq" || attr(attempts[1], "streamgen.retry_count") != "1" {
		t.Errorf("the retry's span: %v", attempts[1].Attributes())
	}
	if !sawWaiting {
		t.Error("the retry copy waiting in memory was never gauged")
	}
}

// freeEndpoint returns a tcp endpoint on loopback with a port nobody uses.
func freeEndpoint(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "tcp://" + ln.Addr().String()
}

// On RabbitMQ, a publish to an exchange is a span "send <exchange>" whose
// destination is the exchange and whose routing key is its own attribute,
// as the messaging semantic conventions say; the routing key set with
// runtime.WithRoutingKey is the one named.
func TestRabbitMQExchangeSendSpan(t *testing.T) {
	testkit.NoLeaks(t)
	conn := testkit.DialRabbitMQ(t, testkit.RabbitMQURL())
	q, x := testkit.UniqueName("otelstream"), testkit.UniqueName("otelstream.x")
	t.Cleanup(func() {
		ch, err := conn.Channel()
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer ch.Close()
		if _, err := ch.QueueDelete(q, false, false, false); err != nil {
			t.Errorf("delete %s: %v", q, err)
		}
		if err := ch.ExchangeDelete(x, false, false); err != nil {
			t.Errorf("delete %s: %v", x, err)
		}
	})
	tm := newTelemetry(t)
	rb := rabbitmq.New(testkit.RabbitMQURL(), rabbitmq.WithConnectionName("streamgen-test-otel-"+q))
	app := runtime.NewApp("otelstream-test", runtime.WithObserver(tm.obs), runtime.WithShutdownTimeout(20*time.Second))
	app.Mount(rb, &runtime.Subscription{Name: q, Broker: runtime.RabbitMQ, Exchange: x, Bindings: []string{"order.#"},
		Handlers: []runtime.Handler{runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() })}})
	runUntil(t, app, "the event to be handled", func() bool { return len(tm.named("process "+q)) == 1 }, func() {
		if err := runtime.Publish(context.Background(), tm.obs.Publisher(rb), runtime.Exchange(x, "order.placed"), "Job", job{ID: 1},
			runtime.WithRoutingKey("order.placed.eu")); err != nil {
			t.Fatal(err)
		}
	})
	sends := tm.named("send " + x)
	if len(sends) != 1 {
		t.Fatalf("spans:%s", describe(tm.spans.Ended()))
	}
	if s := sends[0]; attr(s, "messaging.system") != "rabbitmq" || attr(s, "messaging.destination.name") != x ||
		attr(s, "messaging.rabbitmq.destination.routing_key") != "order.placed.eu" {
		t.Errorf("span %s: %v", s.Name(), s.Attributes())
	}
}
