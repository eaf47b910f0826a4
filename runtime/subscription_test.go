package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/internal/retrycount"
)

func okHandler(messageType string, p runtime.Policy) runtime.Handler {
	return runtime.Handle(messageType, p, func(context.Context, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() })
}

// problem is one expected ValidationError: the handler index, the key, and
// a fragment of the message.
type problem struct {
	handler int
	key     string
	text    string
}

func TestValidate(t *testing.T) {
	rabbit, zero, anyKind := runtime.RabbitMQ, runtime.ZeroMQ, runtime.AnyBroker
	for _, tc := range []struct {
		name string
		kind runtime.BrokerKind
		sub  runtime.Subscription
		want []problem
	}{
		// Valid subscriptions.
		{"rabbitmq with everything", rabbit, runtime.Subscription{Name: "jobs", Broker: rabbit, RetryDelays: []time.Duration{time.Second, time.Minute},
			Prefetch: 10, Concurrency: 4, MaxPayloadBytes: 1 << 20, QueueType: runtime.QuorumQueue, DeliveryLimit: 5, SingleActiveConsumer: true,
			Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 5, DeadLetter: "jobs.dead"}), okHandler("Invoice", runtime.Policy{})}}, nil},
		{"zeromq with retries and a dead letter", zero, runtime.Subscription{Name: "jobs", Broker: zero,
			Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 5, DeadLetter: "jobs.dead", OutRetry: "jobs"})}}, nil},
		{"any broker on rabbitmq", rabbit, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, nil},
		{"broker-specific keys are not checked for AnyBroker", anyKind, runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{time.Second}, AutoAck: true,
			Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 3, OutRetry: "jobs"})}}, nil},
		{"ack=auto without retries", rabbit, runtime.Subscription{Name: "jobs", AutoAck: true, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 1})}}, nil},

		// Rules for every broker.
		{"no name", rabbit, runtime.Subscription{Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "", "the subscription has no name"}}},
		{"written for another broker", zero, runtime.Subscription{Name: "jobs", Broker: rabbit, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "broker", "written for rabbitmq but mounted on a zeromq broker"}}},
		{"no handlers", rabbit, runtime.Subscription{Name: "jobs"},
			[]problem{{-1, "", "no handlers"}}},
		{"a handler without a type", rabbit, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("", runtime.Policy{})}},
			[]problem{{0, "type", "no message type name"}}},
		{"a type handled twice", rabbit, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{}), okHandler("Invoice", runtime.Policy{}), okHandler("Job", runtime.Policy{})}},
			[]problem{{2, "type", `message type "Job" is handled twice (handlers 1 and 3)`}}},
		{"negative max_attempts", rabbit, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: -1})}},
			[]problem{{0, "max_attempts", "max_attempts is -1"}}},
		{"max_attempts beyond the counted retries", anyKind, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: retrycount.Max + 2})}},
			[]problem{{0, "max_attempts", fmt.Sprintf("max_attempts is %d: a retry count is read up to %d, so it must be at most %d", retrycount.Max+2, retrycount.Max, retrycount.Max+1)}}},
		{"max_attempts at the bound", anyKind, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: retrycount.Max + 1})}}, nil},
		{"dead letter on its own queue", zero, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{DeadLetter: "jobs"})}},
			[]problem{{0, "dead_letter", `dead_letter "jobs" is the subscription's own queue`}}},
		{"a handler not made with Handle", rabbit, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{{MessageType: "Job"}}},
			[]problem{{0, "", `handler for "Job" was not made with runtime.Handle`}}},
		{"a retry_delay step that is not positive", rabbit, runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{0}, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 2})}},
			[]problem{{-1, "retry_delay", "retry_delay step 1 is 0s"}}},
		{"retry_delay steps that do not increase", rabbit, runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{time.Minute, 10 * time.Second}, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 2})}},
			[]problem{{-1, "retry_delay", "retry_delay steps must increase: 10s follows 1m"}}},
		{"negative prefetch, concurrency and max_payload_bytes", rabbit, runtime.Subscription{Name: "jobs", Prefetch: -1, Concurrency: -2, MaxPayloadBytes: -3, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "prefetch", "prefetch is -1"}, {-1, "concurrency", "concurrency is -2"}, {-1, "max_payload_bytes", "max_payload_bytes is -3"}}},
		{"prefetch beyond basic.qos", rabbit, runtime.Subscription{Name: "jobs", Prefetch: 70000, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "prefetch", "prefetch is 70000: RabbitMQ takes at most 65535 unsettled deliveries per consumer (basic.qos has 16 bits for it); set prefetch=65535 or less"}}},
		{"prefetch beyond basic.qos on any broker", anyKind, runtime.Subscription{Name: "jobs", Prefetch: 65536, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "prefetch", "prefetch is 65536"}}},
		{"prefetch at the bound of basic.qos", rabbit, runtime.Subscription{Name: "jobs", Prefetch: 65535, Concurrency: 70000, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, nil},
		{"a concurrency that raises the prefetch beyond basic.qos", rabbit, runtime.Subscription{Name: "jobs", Concurrency: 70000, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "concurrency", "concurrency is 70000, which raises the prefetch to 70000, and RabbitMQ takes at most 65535"}}},
		{"a concurrency at the bound of basic.qos", rabbit, runtime.Subscription{Name: "jobs", Concurrency: 65535, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, nil},
		{"zeromq has no basic.qos", zero, runtime.Subscription{Name: "jobs", Prefetch: 70000, Concurrency: 70000, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, nil},
		{"unknown queue_type", anyKind, runtime.Subscription{Name: "jobs", QueueType: "stream", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "queue_type", `queue_type is "stream"`}}},

		{"a negative timeout", anyKind, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{Timeout: -time.Second})}},
			[]problem{{0, "timeout", "timeout is -1s: it must be a positive duration"}}},
		{"a timeout and middleware", anyKind, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{Timeout: time.Second})},
			Middleware: []runtime.Middleware{func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
				return next(ctx, msg, md)
			}}}, nil},
		{"a nil middleware", anyKind, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}, Middleware: []runtime.Middleware{nil}},
			[]problem{{-1, "", "middleware 1 of 1 is nil"}}},

		// RabbitMQ rules.
		{"out_retry on rabbitmq", rabbit, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 2, OutRetry: "jobs"})}},
			[]problem{{0, "out_retry", "out_retry is for zeromq"}}},
		{"ack=auto with retries", rabbit, runtime.Subscription{Name: "jobs", AutoAck: true, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 3})}},
			[]problem{{0, "max_attempts", "ack=auto is at-most-once and cannot retry"}}},
		{"retry_delay without retries", rabbit, runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{time.Second}, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "retry_delay", "retry_delay has no effect because no handler retries"}}},
		{"dead letter on the wait queue", rabbit, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 2, DeadLetter: "jobs.retry"})}},
			[]problem{{0, "dead_letter", `dead_letter "jobs.retry" is the subscription's wait queue`}}},
		{"dead letter on a ladder step", rabbit, runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{time.Second, time.Minute},
			Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 2}), okHandler("Invoice", runtime.Policy{DeadLetter: "jobs.retry.1m"})}},
			[]problem{{1, "dead_letter", `dead_letter "jobs.retry.1m" is the subscription's wait queue`}}},
		{"dead letter on the suspect queue", rabbit, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{DeadLetter: "jobs.suspect"})}},
			[]problem{{0, "dead_letter", `dead_letter "jobs.suspect" is the subscription's suspect queue, where messages that came back after a crash wait to be handled alone`}}},
		{"ack=auto has no suspect queue", rabbit, runtime.Subscription{Name: "jobs", AutoAck: true, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{DeadLetter: "jobs.suspect"})}}, nil},
		{"a quorum queue's too", rabbit, runtime.Subscription{Name: "jobs", QueueType: runtime.QuorumQueue, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{DeadLetter: "jobs.suspect"})}},
			[]problem{{0, "dead_letter", `dead_letter "jobs.suspect" is the subscription's suspect queue`}}},
		{"zeromq has no suspect queue", zero, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{DeadLetter: "jobs.suspect"})}}, nil},

		{"delivery_limit on a classic queue", rabbit, runtime.Subscription{Name: "jobs", DeliveryLimit: 3, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "delivery_limit", "delivery_limit is for quorum queues (RabbitMQ refuses x-delivery-limit on a classic queue): add queue_type=quorum"}}},
		{"negative delivery_limit", rabbit, runtime.Subscription{Name: "jobs", QueueType: runtime.QuorumQueue, DeliveryLimit: -1, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "delivery_limit", "delivery_limit is -1: it must be 1 or more"}}},
		{"single_active_consumer on a classic queue", rabbit, runtime.Subscription{Name: "jobs", SingleActiveConsumer: true, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, nil},

		// ZeroMQ rules.
		{"retry_delay on zeromq", zero, runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{time.Second}, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "retry_delay", "retry_delay is for rabbitmq"}}},
		{"ack=auto on zeromq", zero, runtime.Subscription{Name: "jobs", AutoAck: true, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "ack", "ack is for rabbitmq"}}},
		{"queue_type on zeromq", zero, runtime.Subscription{Name: "jobs", QueueType: runtime.ClassicQueue, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "queue_type", "queue_type is for rabbitmq"}}},
		{"delivery_limit and single_active_consumer on zeromq", zero, runtime.Subscription{Name: "jobs", DeliveryLimit: 2, SingleActiveConsumer: true, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "delivery_limit", "delivery_limit is for rabbitmq"}, {-1, "single_active_consumer", "single_active_consumer is for rabbitmq"}}},
		{"max_attempts without out_retry", zero, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 5})}},
			[]problem{{0, "max_attempts", "max_attempts=5 needs a destination for the retry copies on zeromq"}}},
		{"out_retry without max_attempts", zero, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{OutRetry: "jobs"})}},
			[]problem{{0, "out_retry", "without max_attempts there are none"}}},
		{"dead letter on the out_retry queue", zero, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 3, OutRetry: "jobs.later", DeadLetter: "jobs.later"})}},
			[]problem{{0, "dead_letter", `dead_letter "jobs.later" is also its out_retry: retry copies and dead letters would mix in one queue; name another queue for dead_letter or for out_retry`}}},
		{"dead letter on another handler's out_retry queue", zero, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
			okHandler("Job", runtime.Policy{MaxAttempts: 3, OutRetry: "jobs.later"}), okHandler("Invoice", runtime.Policy{DeadLetter: "jobs.later"})}},
			[]problem{{1, "dead_letter", `dead_letter "jobs.later" is the out_retry of message type "Job": retry copies and dead letters would mix in one queue; name another queue for dead_letter or for out_retry`}}},
		{"out_retry to the subscription itself with a dead letter of another name", zero, runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 3, OutRetry: "jobs", DeadLetter: "self"})}}, nil},

		// Exchanges.
		{"topic exchange with patterns", rabbit, runtime.Subscription{Name: "jobs", Exchange: "orders", Bindings: []string{"order.*", "order.#", "#", "*.eu.#"}, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 3})}}, nil},
		{"direct exchange, a key with dots and stars", rabbit, runtime.Subscription{Name: "jobs", Exchange: "mail", ExchangeType: runtime.DirectExchange, Bindings: []string{"a..b*"}, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, nil},
		{"fanout exchange", rabbit, runtime.Subscription{Name: "jobs", Exchange: "events", ExchangeType: runtime.FanoutExchange, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, nil},
		{"topic without a binding", rabbit, runtime.Subscription{Name: "jobs", Exchange: "orders", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "exchange", "exchange orders is a topic exchange, which delivers only what a binding key matches: add binding=<key>"}}},
		{"direct without a binding", anyKind, runtime.Subscription{Name: "jobs", Exchange: "mail", ExchangeType: runtime.DirectExchange, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "exchange", "is a direct exchange"}}},
		{"fanout with a binding", rabbit, runtime.Subscription{Name: "jobs", Exchange: "events", ExchangeType: runtime.FanoutExchange, Bindings: []string{"x"}, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "binding", "fanout exchange, which ignores binding keys"}}},
		{"bad exchange type", rabbit, runtime.Subscription{Name: "jobs", Exchange: "events", ExchangeType: "headers", Bindings: []string{"x"}, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "exchange_type", `exchange_type is "headers": use topic, direct or fanout`}}},
		{"binding without an exchange", rabbit, runtime.Subscription{Name: "jobs", ExchangeType: runtime.TopicExchange, Bindings: []string{"x"}, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "exchange_type", "needs an exchange"}, {-1, "binding", "binding needs an exchange"}}},
		{"bad topic patterns", rabbit, runtime.Subscription{Name: "jobs", Exchange: "orders", Bindings: []string{"order..placed", ".x", "x.", "", "order*", "a.b", "a.b", strings.Repeat("a", 256)}, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "binding", `"order..placed" has an empty word`}, {-1, "binding", `".x" has an empty word`}, {-1, "binding", `"x." has an empty word`},
				{-1, "binding", "a binding key is empty"}, {-1, "binding", `"order*" has "order*": * and # stand for whole words only`}, {-1, "binding", `"a.b" is listed twice`},
				{-1, "binding", "is 256 bytes long: RabbitMQ allows at most 255"}}},
		{"long exchange name", rabbit, runtime.Subscription{Name: "jobs", Exchange: strings.Repeat("x", 256), ExchangeType: runtime.FanoutExchange, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "exchange", "the exchange name is 256 bytes long"}}},
		{"exchange keys on zeromq", zero, runtime.Subscription{Name: "jobs", Exchange: "orders", ExchangeType: runtime.TopicExchange, Bindings: []string{"x"}, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "exchange", "exchange is for rabbitmq"}, {-1, "exchange_type", "exchange_type is for rabbitmq"}, {-1, "binding", "binding is for rabbitmq"}}},

		// Every problem is reported, not the first only.
		{"several problems", zero, runtime.Subscription{Broker: rabbit, AutoAck: true, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: -1}), okHandler("Job", runtime.Policy{})}},
			[]problem{{-1, "", "no name"}, {-1, "broker", "written for rabbitmq"}, {0, "max_attempts", "max_attempts is -1"}, {1, "type", "handled twice"}, {-1, "ack", "ack is for rabbitmq"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.sub.Validate(tc.kind)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			errs := problems(t, err)
			if len(errs) != len(tc.want) {
				t.Fatalf("%d problems, want %d: %v", len(errs), len(tc.want), err)
			}
			for i, w := range tc.want {
				e := errs[i]
				if e.Handler != w.handler || e.Key != w.key || !strings.Contains(e.Msg, w.text) || e.Subscription != tc.sub.Name {
					t.Errorf("problem %d = {handler %d, key %q, %q}, want {handler %d, key %q, containing %q}", i, e.Handler, e.Key, e.Msg, w.handler, w.key, w.text)
				}
			}
			if !strings.HasPrefix(err.Error(), "runtime: invalid subscription: subscription ") {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
}

// problems returns the *ValidationError problems err lists, failing the
// test unless it lists them as Validate documents.
func problems(t *testing.T, err error) []*runtime.ValidationError {
	t.Helper()
	multi, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Validate: %v (%T), want an error with Unwrap() []error", err, err)
	}
	var out []*runtime.ValidationError
	for _, e := range multi.Unwrap() {
		v, ok := e.(*runtime.ValidationError)
		if !ok {
			t.Fatalf("a problem is %v (%T), want a *runtime.ValidationError", e, e)
		}
		out = append(out, v)
	}
	var first *runtime.ValidationError
	if !errors.As(err, &first) || first != out[0] {
		t.Fatalf("errors.As(%v) does not find the first problem", err)
	}
	return out
}

func TestValidationErrorsError(t *testing.T) {
	jobs := &runtime.Subscription{Name: "jobs", Prefetch: -1}
	want := `runtime: invalid subscription: subscription "jobs": no handlers: a subscription needs at least one; subscription "jobs": prefetch is -1: it must be 0 (the default) or more`
	if got := jobs.Validate(runtime.RabbitMQ).Error(); got != want {
		t.Errorf("Error() =\n %q\nwant\n %q", got, want)
	}
}

func TestSubscriptionAccessors(t *testing.T) {
	sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		okHandler("Job", runtime.Policy{}),
		okHandler("Invoice", runtime.Policy{MaxAttempts: 3, DeadLetter: "invoices.dead"}),
		okHandler("Refund", runtime.Policy{DeadLetter: "refunds.dead"}),
		okHandler("Note", runtime.Policy{DeadLetter: "invoices.dead"}),
	}}
	if sub.Workers() != 1 {
		t.Errorf("defaults: workers %d", sub.Workers())
	}
	if h := sub.Handler("Invoice"); h == nil || h.Policy.MaxAttempts != 3 {
		t.Errorf("Handler(Invoice) = %v", h)
	}
	if h := sub.Handler("Missing"); h != nil {
		t.Errorf("Handler(Missing) = %v, want nil", h)
	}
	if !sub.Retries() {
		t.Error("Retries() = false with a handler allowing 3 attempts")
	}
	if got := sub.PoisonDeadLetter(); got != "invoices.dead" {
		t.Errorf("PoisonDeadLetter() = %q, want the first one named", got)
	}
	if got := sub.DeadLetters(); !slices.Equal(got, []string{"invoices.dead", "refunds.dead"}) {
		t.Errorf("DeadLetters() = %v", got)
	}
	auto := &runtime.Subscription{AutoAck: true, Concurrency: 8, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 1})}}
	if auto.Workers() != 8 || auto.Retries() || auto.PoisonDeadLetter() != "" || auto.DeadLetters() != nil {
		t.Errorf("auto: workers %d, retries %v, poison DL %q, DLs %v", auto.Workers(), auto.Retries(), auto.PoisonDeadLetter(), auto.DeadLetters())
	}
}

func TestPolicyAttempts(t *testing.T) {
	for max, want := range map[int]int{-3: 1, 0: 1, 1: 1, 5: 5} {
		if got := (runtime.Policy{MaxAttempts: max}).Attempts(); got != want {
			t.Errorf("Attempts() with MaxAttempts %d = %d, want %d", max, got, want)
		}
	}
}

// The crash limit is the quorum delivery limit's rule, on every queue
// type: delivery_limit when set, else the largest max_attempts, at least
// 2, so that one lost connection never parks a message; with ack=auto
// nothing comes back, so there is none. Only a quorum queue is declared
// with it (x-delivery-limit): RabbitMQ refuses it on a classic queue.
func TestCrashLimit(t *testing.T) {
	sub := func(q runtime.QueueType, limit int, auto bool, attempts ...int) *runtime.Subscription {
		s := &runtime.Subscription{Name: "jobs", QueueType: q, DeliveryLimit: limit, AutoAck: auto}
		for i, n := range attempts {
			s.Handlers = append(s.Handlers, okHandler(fmt.Sprint("T", i), runtime.Policy{MaxAttempts: n}))
		}
		return s
	}
	for _, c := range []struct {
		sub          *runtime.Subscription
		crash, queue int
	}{
		{sub("", 0, false, 3), 3, 0},
		{sub(runtime.ClassicQueue, 0, false, 3, 5), 5, 0},
		{sub("", 0, false, 1), 2, 0},
		{sub("", 0, false, 0), 2, 0},
		{sub(runtime.QuorumQueue, 0, false, 3), 3, 3},
		{sub(runtime.QuorumQueue, 7, false, 3), 7, 7},
		{sub(runtime.QuorumQueue, 0, true, 1), 0, 2},
		{sub("", 0, true, 1), 0, 0},
	} {
		if got := c.sub.CrashLimit(); got != c.crash {
			t.Errorf("CrashLimit() of %q queue, delivery_limit=%d, ack=auto %v, handlers %v = %d, want %d", c.sub.QueueType, c.sub.DeliveryLimit, c.sub.AutoAck, c.sub.Handlers, got, c.crash)
		}
		if got := c.sub.DeliveryLimitInForce(); got != c.queue {
			t.Errorf("DeliveryLimitInForce() of %q queue, delivery_limit=%d, ack=auto %v, handlers %v = %d, want %d", c.sub.QueueType, c.sub.DeliveryLimit, c.sub.AutoAck, c.sub.Handlers, got, c.queue)
		}
	}
	if got := sub("", 0, false, 3).SuspectQueue(); got != "jobs.suspect" {
		t.Errorf("SuspectQueue() = %q, want jobs.suspect", got)
	}
	if got := sub("", 0, true, 1).SuspectQueue(); got != "" {
		t.Errorf("SuspectQueue() with ack=auto = %q, want none", got)
	}
	if got := sub(runtime.QuorumQueue, 0, false, 3).SuspectQueue(); got != "jobs.suspect" {
		t.Errorf("SuspectQueue() of a quorum queue = %q, want jobs.suspect", got)
	}
}
