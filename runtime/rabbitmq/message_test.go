package rabbitmq

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/clock"
)

func original() *amqp.Delivery {
	return &amqp.Delivery{
		Headers: amqp.Table{
			"tenant":                 "acme",
			"x-death":                []any{death("jobs.retry", "expired", int64(1))},
			"x-first-death-queue":    "jobs.retry",
			"x-first-death-reason":   "expired",
			"x-first-death-exchange": "",
			"x-last-death-queue":     "jobs.retry",
			"x-delivery-count":       int64(2),
			"x-acquired-count":       int64(3), // RabbitMQ 4
			runtime.RetryCountHeader: "1",
		},
		ContentType:     "application/json",
		ContentEncoding: "gzip",
		DeliveryMode:    amqp.Transient,
		Priority:        3,
		CorrelationId:   "corr",
		ReplyTo:         "replies",
		Expiration:      "60000",
		MessageId:       "m-1",
		Timestamp:       time.Unix(1700000000, 0),
		Type:            "Job",
		UserId:          "guest",
		AppId:           "billing",
		Body:            []byte(`{"id":1}`),
	}
}

// capture is a Transport that builds the AMQP publishing of each copy, as
// the runner does, and keeps the last.
type capture struct {
	nopTransport
	p amqp.Publishing
	n int
}

func (c *capture) Send(_ context.Context, d *adapter.Delivery, cp *adapter.Copy, done func(error)) {
	c.p = copyOf(d, cp, "guest")
	c.n++
	done(nil)
}

// fixedClock is a clock.Clock stopped at now.
type fixedClock struct{ now time.Time }

func (c fixedClock) Now() time.Time                                { return c.now }
func (fixedClock) AfterFunc(d time.Duration, f func()) clock.Timer { return time.AfterFunc(d, f) }

// sentCopy is the copy the runtime has the runner publish when the handler
// of d fails under policy: d, as original() makes it, is the 2nd attempt.
func sentCopy(t *testing.T, d *amqp.Delivery, policy runtime.Policy, now time.Time) amqp.Publishing {
	t.Helper()
	sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", policy, func(context.Context, *struct{}, runtime.Metadata) runtime.Outcome {
			return runtime.Retry().Because(errors.New("boom"))
		}),
	}}
	tr := &capture{}
	c := adapter.NewConsumer(sub, runtime.Env{Clock: fixedClock{now}}, adapter.Rules{Kind: runtime.RabbitMQ}, tr)
	c.Handle(t.Context(), delivery(d, c))
	if tr.n != 1 {
		t.Fatalf("%d copies sent, want 1", tr.n)
	}
	return tr.p
}

func TestRetryCopy(t *testing.T) {
	testkit.NoLeaks(t)
	d := original()
	p := sentCopy(t, d, runtime.Policy{MaxAttempts: 3}, time.Now())
	if p.Headers[runtime.RetryCountHeader] != "2" {
		t.Errorf("count header = %v, want \"2\" (the attempt that failed)", p.Headers[runtime.RetryCountHeader])
	}
	for _, h := range []string{"x-death", "x-first-death-queue", "x-first-death-reason", "x-first-death-exchange", "x-last-death-queue", "x-delivery-count", "x-acquired-count"} {
		if _, ok := p.Headers[h]; ok {
			t.Errorf("copy carries broker bookkeeping header %s", h)
		}
	}
	if p.Headers["tenant"] != "acme" {
		t.Errorf("application header lost: %v", p.Headers)
	}
	if p.Expiration != "" {
		t.Errorf("copy carries the original expiration %q", p.Expiration)
	}
	if p.DeliveryMode != amqp.Persistent {
		t.Errorf("delivery mode = %d, want persistent", p.DeliveryMode)
	}
	if p.ContentType != d.ContentType || p.ContentEncoding != d.ContentEncoding || p.Priority != d.Priority ||
		p.CorrelationId != d.CorrelationId || p.ReplyTo != d.ReplyTo || p.MessageId != d.MessageId ||
		!p.Timestamp.Equal(d.Timestamp) || p.Type != d.Type || p.UserId != d.UserId || p.AppId != d.AppId ||
		string(p.Body) != string(d.Body) {
		t.Errorf("properties not copied:\n got %+v\nfrom %+v", p, d)
	}
	if d.Headers["x-death"] == nil || d.Headers[runtime.RetryCountHeader] != "1" {
		t.Errorf("making a copy changed the original's headers: %v", d.Headers)
	}
}

func TestCopyDropsForeignUserID(t *testing.T) {
	testkit.NoLeaks(t)
	d := original()
	d.UserId = "alice"
	if p := sentCopy(t, d, runtime.Policy{MaxAttempts: 3}, time.Now()); p.UserId != "" {
		t.Errorf("copy published as guest keeps user-id %q; the broker would refuse it", p.UserId)
	}
}

func TestCopyGetsAMessageID(t *testing.T) {
	testkit.NoLeaks(t)
	d := original()
	d.MessageId = ""
	p := sentCopy(t, d, runtime.Policy{MaxAttempts: 3}, time.Now())
	if len(p.MessageId) != 32 {
		t.Errorf("copy of a message without id has id %q, want a fresh one", p.MessageId)
	}
}

func TestDeadLetterCopyExplainsItself(t *testing.T) {
	testkit.NoLeaks(t)
	now := time.Date(2025, 1, 2, 3, 4, 5, 6e6, time.UTC)
	p := sentCopy(t, original(), runtime.Policy{MaxAttempts: 2, DeadLetter: "jobs.dead"}, now)
	want := map[string]string{
		runtime.HeaderDeadLetterReason:   "failed on attempt 2 of 2: boom",
		runtime.HeaderDeadLetterSource:   "jobs",
		runtime.HeaderDeadLetterAttempts: "2",
		runtime.HeaderDeadLetterPoison:   "false",
		runtime.HeaderDeadLetterTime:     "2025-01-02T03:04:05.006Z",
	}
	for k, w := range want {
		if p.Headers[k] != w {
			t.Errorf("header %s = %v, want %q", k, p.Headers[k], w)
		}
	}
	if _, ok := p.Headers["x-death"]; ok {
		t.Error("dead-letter copy carries x-death")
	}
	if c, ok := p.Headers[runtime.RetryCountHeader]; ok {
		t.Errorf("dead-letter copy carries retry count %v; its consumers must start counting afresh", c)
	}
	if p.Headers["tenant"] != "acme" {
		t.Errorf("dead-letter copy lost an application header: %v", p.Headers)
	}
	if p.DeliveryMode != amqp.Persistent || p.Expiration != "" {
		t.Errorf("dead-letter copy: delivery mode %d, expiration %q; want persistent, none", p.DeliveryMode, p.Expiration)
	}
}

func TestPublishingOf(t *testing.T) {
	testkit.NoLeaks(t)
	now := time.Unix(1700000000, 0)
	p := publishingOf(runtime.Message{ID: "id-1", Type: "Job", ContentType: "application/json", Headers: map[string]string{"a": "b"}, Body: []byte("{}")}, now)
	if p.MessageId != "id-1" || p.Type != "Job" || p.ContentType != "application/json" || p.DeliveryMode != amqp.Persistent ||
		p.Headers["a"] != "b" || string(p.Body) != "{}" || !p.Timestamp.Equal(now) {
		t.Errorf("publishing = %+v", p)
	}
	if p := publishingOf(runtime.Message{Type: "Job"}, now); p.MessageId == "" {
		t.Error("a message without id is published without one")
	}
}

func TestTextHeaders(t *testing.T) {
	testkit.NoLeaks(t)
	h := textHeaders(amqp.Table{
		"s": "text", "b": []byte("bytes"), "t": true, "i": int32(-4), "u": uint16(9), "f": 1.5,
		"ts":      time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		"x-death": []any{amqp.Table{"count": int64(1)}},
		"tbl":     amqp.Table{"k": "v"},
		"i8":      int8(-8), "i16": int16(-16), "i64": int64(math.MinInt64), "int": 7, "u8": uint8(255), "u32": uint32(math.MaxUint32),
	})
	want := map[string]string{"s": "text", "b": "bytes", "t": "true", "i": "-4", "u": "9", "f": "1.5", "ts": "2025-01-02T03:04:05Z",
		"i8": "-8", "i16": "-16", "i64": "-9223372036854775808", "int": "7", "u8": "255", "u32": "4294967295"}
	for k, w := range want {
		if h[k] != w {
			t.Errorf("%s = %q, want %q", k, h[k], w)
		}
	}
	if _, ok := h["x-death"]; ok {
		t.Error("an array header got a text form")
	}
	if _, ok := h["tbl"]; ok {
		t.Error("a table header got a text form")
	}
}

// fillCase returns what fillDelivery is given for a delivery with no
// headers and no expiration, most deliveries.
func fillCase() (*amqp.Delivery, *adapter.Consumer) {
	c := newRunner(New(brokerURL()), &runtime.Subscription{Name: "jobs", Broker: runtime.RabbitMQ}, runtime.Env{}).c
	return &amqp.Delivery{MessageId: "m-1", Type: "Job", ContentType: "application/json", Body: []byte("{}")}, c
}

// A delivery with no headers and no expiration is seen by the handlers
// with an empty headers map (BenchmarkFillDelivery counts what it
// allocates).
func TestFillDeliveryWithoutHeaders(t *testing.T) {
	d, c := fillCase()
	var out adapter.Delivery
	fillDelivery(&out, d, c)
	if out.Headers == nil || len(out.Headers) != 0 || out.Expiration != 0 || out.MessageID != "m-1" || out.Type != "Job" || string(out.Body) != "{}" {
		t.Errorf("filled %+v", out)
	}
}

// BenchmarkFillDelivery: what the Consumer sees of a delivery with no
// headers and no expiration, most deliveries, costs one allocation: the
// handlers' empty headers map. make bench checks the allocs/op.
func BenchmarkFillDelivery(b *testing.B) {
	d, c := fillCase()
	var out adapter.Delivery
	b.ReportAllocs()
	for b.Loop() {
		fillDelivery(&out, d, c)
	}
	if out.Headers == nil || out.MessageID != "m-1" {
		b.Errorf("filled %+v", out)
	}
}
