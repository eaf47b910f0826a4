package streamtest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// propertyOptions sets every message property, and the expiration when
// expire is set.
func propertyOptions(ts time.Time, expire time.Duration) []runtime.PublishOption {
	return []runtime.PublishOption{
		runtime.WithMessageID("p-1"), runtime.WithProperties(runtime.Properties{CorrelationID: "corr-1", ReplyTo: "replies",
			Priority: 7, Timestamp: ts, AppID: "checkout", Expiration: expire}),
	}
}

// checkProperties reports the properties of md that differ from those
// propertyOptions sets.
func checkProperties(t *testing.T, what string, md runtime.Metadata, ts time.Time) {
	t.Helper()
	if md.CorrelationID != "corr-1" || md.ReplyTo != "replies" || md.Priority != 7 || !md.Timestamp.Equal(ts) || md.AppID != "checkout" {
		t.Errorf("%s: correlation %q reply-to %q priority %d timestamp %v app %q; want corr-1, replies, 7, %v, checkout",
			what, md.CorrelationID, md.ReplyTo, md.Priority, md.Timestamp, md.AppID, ts)
	}
}

// Message properties reach the handler's metadata and stay on retry
// copies and dead letters, except the expiration, which a copy drops.
func TestHarnessKeepsMessagePropertiesOnCopies(t *testing.T) {
	ts := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, kind := range []runtime.BrokerKind{runtime.RabbitMQ, runtime.ZeroMQ} {
		t.Run(string(kind), func(t *testing.T) {
			h := streamtest.New(t, kind, streamtest.WithQuietLogs())
			var seen calls
			sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
				recorder(&seen, runtime.Policy{MaxAttempts: 2, DeadLetter: "jobs.dead"}, runtime.Retry().Because(errJobFailed)),
			}}
			if kind == runtime.RabbitMQ {
				sub.RetryDelays = []time.Duration{time.Second}
			} else {
				sub.Handlers[0].Policy.OutRetry = sub.Name
			}
			h.App().Mount(h.Broker(), sub)
			h.Start()
			var expire time.Duration
			if kind == runtime.RabbitMQ {
				expire = time.Minute
			}
			opts := propertyOptions(ts, expire)
			if err := runtime.Publish(context.Background(), h.Broker(), runtime.Queue("jobs"), "Job", job{ID: 1}, opts...); err != nil {
				t.Fatal(err)
			}
			h.Wait()
			h.Advance(time.Second)
			h.Advance(time.Second)
			got := seen.list()
			if len(got) != 2 {
				t.Fatalf("%d deliveries, want 2", len(got))
			}
			checkProperties(t, "first delivery", got[0], ts)
			checkProperties(t, "retry copy", got[1], ts)
			if kind == runtime.RabbitMQ && got[0].Expiration != time.Minute {
				t.Errorf("first delivery: expiration %v, want 1m", got[0].Expiration)
			}
			if got[1].Expiration != 0 {
				t.Errorf("retry copy: expiration %v, want none", got[1].Expiration)
			}
			dl := h.Queue("jobs.dead")
			if len(dl) != 1 {
				t.Fatalf("jobs.dead holds %d messages, want 1", len(dl))
			}
			if m := dl[0]; m.CorrelationID != "corr-1" || m.ReplyTo != "replies" || m.Priority != 7 || !m.Timestamp.Equal(ts) || m.AppID != "checkout" || m.Expiration != 0 {
				t.Errorf("dead letter: %+v, want the properties without expiration", m)
			}
		})
	}
}

// ZeroMQ has no expiration: the harness refuses it as the adapter does.
func TestHarnessZeroMQRefusesExpiration(t *testing.T) {
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithQuietLogs())
	err := runtime.Publish(context.Background(), h.Broker(), runtime.Queue("jobs"), "Job", job{ID: 1}, runtime.WithProperties(runtime.Properties{Expiration: time.Second}))
	if err == nil || !strings.Contains(err.Error(), "expiration is for rabbitmq") {
		t.Errorf("publish with an expiration on zeromq: %v", err)
	}
}

// ZeroMQ carries a message's own fields in headers: the harness refuses an
// application header of one of their names as the adapter does, and a
// RabbitMQ harness, like RabbitMQ, carries it as a header.
func TestHarnessZeroMQRefusesHeadersNamedLikeFields(t *testing.T) {
	for _, name := range []string{"correlation-id", "Reply-To", "message-id", "type"} {
		h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithQuietLogs())
		err := runtime.Publish(context.Background(), h.Broker(), runtime.Queue("jobs"), "Job", job{ID: 1}, runtime.WithHeader(name, "x"))
		if err == nil || !strings.Contains(err.Error(), "set from the message's own field") {
			t.Errorf("publish with header %q on zeromq: %v, want it refused", name, err)
		}
	}
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	if err := runtime.Publish(context.Background(), h.Broker(), runtime.Queue("jobs"), "Job", job{ID: 1}, runtime.WithHeader("correlation-id", "x")); err != nil {
		t.Errorf("publish with header correlation-id on rabbitmq: %v", err)
	}
}
