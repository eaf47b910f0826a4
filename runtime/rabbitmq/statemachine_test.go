package rabbitmq

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// Received → Decoded → Delivered: the handler succeeds, the delivery is
// acked, nothing is left anywhere.
func TestDeliveredIsAcked(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("delivered")
	var c calls
	a := runApp(t, newTestBroker(), sub(q, time.Second, handler("Job", runtime.Policy{MaxAttempts: 3, DeadLetter: q + ".dl"}, &c, alwaysAck)))
	publishJob(t, a.broker, q, "Job", job{ID: 1}, runtime.WithMessageID("m-1"))
	testkit.Eventually(t, "the delivery to be acked", func() bool { return a.stats(q).Acked == 1 })
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if got := c.attempts(); !slices.Equal(got, []int{1}) {
		t.Errorf("attempts = %v, want [1]", got)
	}
	if md := c.metadata()[0]; md.MessageID != "m-1" || md.MaxAttempts != 3 || md.Subscription != q || md.Redelivered {
		t.Errorf("metadata = %+v", md)
	}
	for _, name := range []string{q, q + ".retry", q + ".dl"} {
		if n := adm.ready(name); n != 0 {
			t.Errorf("%s holds %d messages, want 0", name, n)
		}
	}
}

// Failed → Waiting → Received: the copy waits in <q>.retry, the original
// is acked, and after the TTL the next delivery is attempt 2.
func TestFailedWaitsInTheWaitQueueAndComesBack(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("waiting")
	var c calls
	ttl := 1500 * time.Millisecond
	a := runApp(t, newTestBroker(), sub(q, ttl, handler("Job", runtime.Policy{MaxAttempts: 3}, &c, func(_ *job, md runtime.Metadata) runtime.Outcome {
		if md.Attempt == 1 {
			return runtime.Retry().Because(errFailed)
		}
		return runtime.Ack()
	})))
	publishJob(t, a.broker, q, "Job", job{ID: 7})
	testkit.Eventually(t, "the retry copy to wait in "+q+".retry", func() bool { return adm.ready(q+".retry") == 1 })
	if c.len() != 1 {
		t.Errorf("the handler ran %d times before the TTL passed, want once", c.len())
	}
	if n := adm.ready(q); n != 0 {
		t.Errorf("%s holds %d messages while the copy waits, want 0", q, n)
	}
	testkit.Eventually(t, "the second delivery to be acked", func() bool { return a.stats(q).Acked == 1 })
	if got := c.attempts(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("attempts = %v, want [1 2]", got)
	}
	if md := c.metadata()[1]; md.Headers[runtime.RetryCountHeader] != "1" {
		t.Errorf("second delivery carries retry count %q, want 1", md.Headers[runtime.RetryCountHeader])
	}
	st := a.stats(q)
	if st.Retried != 1 || st.Failed != 0 {
		t.Errorf("stats = %+v, want 1 retried, 0 failed", st)
	}
	rec := a.logs.Find(slog.LevelInfo, "message will be retried")
	if len(rec) != 1 || rec[0].Attr("via") != q+".retry" || rec[0].Attr("delay") != ttl.String() {
		t.Errorf("retry log = %v, want one naming via=%s delay=%s", rec, q+".retry", ttl)
	}
	if n := adm.ready(q + ".retry"); n != 0 {
		t.Errorf("wait queue holds %d messages at the end, want 0", n)
	}
}

// Failed → Parked: max_attempts deliveries, then the copy is parked on the
// dead-letter queue with headers that explain it.
func TestExhaustedIsParkedWithExplanation(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("parked")
	var c calls
	a := runApp(t, newTestBroker(), sub(q, 100*time.Millisecond, handler("Job", runtime.Policy{MaxAttempts: 3, DeadLetter: q + ".dl"}, &c, alwaysFail)))
	before := time.Now().Add(-time.Second)
	publishJob(t, a.broker, q, "Job", job{ID: 3}, runtime.WithMessageID("m-3"), runtime.WithHeader("tenant", "acme"))
	testkit.Eventually(t, "the message to be parked", func() bool { return adm.ready(q+".dl") == 1 })
	if got := c.attempts(); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("attempts = %v, want [1 2 3]", got)
	}
	d, ok := adm.get(q + ".dl")
	if !ok {
		t.Fatal("the dead-letter queue is empty")
	}
	h := d.Headers
	if h[runtime.HeaderDeadLetterSource] != q || h[runtime.HeaderDeadLetterAttempts] != "3" || h[runtime.HeaderDeadLetterPoison] != "false" {
		t.Errorf("explanation headers = %v", h)
	}
	if r, _ := h[runtime.HeaderDeadLetterReason].(string); !strings.Contains(r, "attempt 3 of 3") || !strings.Contains(r, errFailed.Error()) {
		t.Errorf("reason = %q, want it to name the attempt and the handler's error", r)
	}
	at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(h[runtime.HeaderDeadLetterTime]))
	if err != nil || at.Before(before) || at.After(time.Now().Add(time.Second)) {
		t.Errorf("parked-at = %v (%v), want a time during the test", h[runtime.HeaderDeadLetterTime], err)
	}
	if h["tenant"] != "acme" || d.MessageId != "m-3" || d.Type != "Job" || d.DeliveryMode != amqp.Persistent {
		t.Errorf("parked copy lost the original's properties: %+v", d)
	}
	if _, ok := h[runtime.RetryCountHeader]; ok {
		t.Errorf("parked copy carries a retry count: %v", h)
	}
	if _, ok := h["x-death"]; ok {
		t.Errorf("parked copy carries x-death: %v", h)
	}
	testkit.Eventually(t, "the park to be counted", func() bool { return a.stats(q).Parked == 1 })
	st := a.stats(q)
	if st.Retried != 2 || st.Parked != 1 || st.Failed != 0 {
		t.Errorf("stats = %+v, want 2 retried, 1 parked", st)
	}
	if n := adm.ready(q) + adm.ready(q+".retry"); n != 0 {
		t.Errorf("%d messages left in the queue and its wait queue", n)
	}
}

// Failed → Dropped: exhausted without a dead-letter queue, the message is
// acked and a warning names the subscription, the message and the reason.
func TestExhaustedWithoutDeadLetterIsDroppedWithWarning(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("dropped")
	var c calls
	a := runApp(t, newTestBroker(), sub(q, 100*time.Millisecond, handler("Job", runtime.Policy{MaxAttempts: 2}, &c, alwaysFail)))
	publishJob(t, a.broker, q, "Job", job{ID: 4}, runtime.WithMessageID("m-4"))
	testkit.Eventually(t, "the message to be dropped", func() bool { return a.stats(q).Dropped == 1 })
	if got := c.attempts(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("attempts = %v, want [1 2]", got)
	}
	testkit.Eventually(t, "the drop to be logged", func() bool { return len(a.logs.Find(slog.LevelWarn, "message dropped")) >= 1 })
	warns := a.logs.Find(slog.LevelWarn, "message dropped")
	if len(warns) != 1 {
		t.Fatalf("%d 'message dropped' warnings, want 1: %v", len(warns), a.logs.Records())
	}
	w := warns[0]
	if w.Attr("subscription") != q || w.Attr("message_id") != "m-4" || !strings.Contains(w.Attr("reason"), errFailed.Error()) {
		t.Errorf("warning = %v, want subscription, message id and reason", w)
	}
	testkit.Eventually(t, "the queues to be empty", func() bool { return adm.ready(q) == 0 && adm.ready(q+".retry") == 0 })
}

// Poison never reaches a handler, skips the retries and is parked.
func TestPoisonIsParked(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("poison")
	var c calls
	s := sub(q, 100*time.Millisecond, handler("Job", runtime.Policy{MaxAttempts: 5, DeadLetter: q + ".dl"}, &c, alwaysAck))
	s.MaxPayloadBytes = 64
	a := runApp(t, newTestBroker(), s)
	poison := []struct {
		id     string
		msg    amqp.Publishing
		reason string
	}{
		{"oversize", amqp.Publishing{Type: "Job", Body: []byte(`{"id":1,"pad":"` + strings.Repeat("x", 100) + `"}`)}, "exceeds max_payload_bytes=64"},
		{"no-type", amqp.Publishing{Body: []byte(`{"id":2}`)}, "has no type"},
		{"unknown-type", amqp.Publishing{Type: "Invoice", Body: []byte(`{"id":3}`)}, `no handler for message type "Invoice"`},
		{"undecodable", amqp.Publishing{Type: "Job", Body: []byte(`not json`)}, "does not decode"},
	}
	for _, p := range poison {
		p.msg.MessageId = p.id
		adm.publish(q, p.msg)
	}
	testkit.Eventually(t, "the poison to be parked", func() bool { return adm.ready(q+".dl") == len(poison) })
	if c.len() != 0 {
		t.Errorf("poison reached the handler %d times", c.len())
	}
	got := map[string]amqp.Delivery{}
	for range poison {
		d, ok := adm.get(q + ".dl")
		if !ok {
			t.Fatal("dead-letter queue ran dry")
		}
		got[d.MessageId] = d
	}
	for _, p := range poison {
		d, ok := got[p.id]
		if !ok {
			t.Errorf("poison %s not parked", p.id)
			continue
		}
		if d.Headers[runtime.HeaderDeadLetterPoison] != "true" || d.Headers[runtime.HeaderDeadLetterAttempts] != "1" {
			t.Errorf("%s: headers %v, want poison true after 1 attempt", p.id, d.Headers)
		}
		if r := fmt.Sprint(d.Headers[runtime.HeaderDeadLetterReason]); !strings.Contains(r, p.reason) {
			t.Errorf("%s: reason %q, want it to say %q", p.id, r, p.reason)
		}
	}
	testkit.Eventually(t, "the parks to be counted", func() bool { return a.stats(q).Parked == int64(len(poison)) })
	st := a.stats(q)
	if st.Parked != int64(len(poison)) || st.Retried != 0 {
		t.Errorf("stats = %+v, want %d parked, none retried", st, len(poison))
	}
	if n := adm.ready(q + ".retry"); n != 0 {
		t.Errorf("poison went to the wait queue: %d messages", n)
	}
}

// Poison without a dead-letter queue is nacked without requeue, so a
// dead-letter exchange the operator set on the queue receives it. The
// subscription uses the queue as the operator declared it.
func TestPoisonWithoutDeadLetterIsNackedToTheBrokersDLX(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("reject", ".retry", ".bdl")
	adm.declare(q+".bdl", nil)
	adm.declare(q, amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": q + ".bdl"})
	var c calls
	a := runApp(t, newTestBroker(), sub(q, 100*time.Millisecond, handler("Job", runtime.Policy{MaxAttempts: 2}, &c, alwaysAck)))
	adm.publish(q, amqp.Publishing{MessageId: "p-1", Type: "Job", Body: []byte("not json")})
	testkit.Eventually(t, "the broker's DLX to receive the rejected message", func() bool { return adm.ready(q+".bdl") == 1 })
	d, _ := adm.get(q + ".bdl")
	deaths, _ := d.Headers["x-death"].([]any)
	if len(deaths) != 1 || deaths[0].(amqp.Table)["reason"] != "rejected" || d.MessageId != "p-1" {
		t.Errorf("broker dead letter = id %s, x-death %v; want p-1 rejected", d.MessageId, deaths)
	}
	testkit.Eventually(t, "the rejection to be counted", func() bool { return a.stats(q).Rejected == 1 })
	if st := a.stats(q); st.Rejected != 1 || c.len() != 0 {
		t.Errorf("stats = %+v, handler calls %d; want 1 rejected, no call", st, c.len())
	}
	infos := a.logs.Find(slog.LevelInfo, "rabbitmq: queue exists with an argument the subscription does not set; using it as declared")
	if len(infos) == 0 || infos[0].Attr("queue") != q {
		t.Errorf("no log line says the operator's queue is used as declared: %v", a.logs.Records())
	}
}

// A retry count above the cap makes the delivery the last attempt: the
// handler sees attempt 3 of 3 (never one beyond), and the message is then
// parked, never retried with an attempt number that overflowed.
func TestHugeRetryCountIsParkedNotRetried(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("hugecount")
	var c calls
	a := runApp(t, newTestBroker(), sub(q, 100*time.Millisecond, handler("Job", runtime.Policy{MaxAttempts: 3, DeadLetter: q + ".dl"}, &c, alwaysFail)))
	adm.publish(q, amqp.Publishing{MessageId: "huge", Type: "Job", Body: []byte(`{"id":1}`),
		Headers: amqp.Table{runtime.RetryCountHeader: "9223372036854775807"}})
	testkit.Eventually(t, "the message to be parked", func() bool { return a.stats(q).Parked == 1 })
	if got, want := c.attempts(), []int{3}; !slices.Equal(got, want) {
		t.Errorf("attempts = %v, want %v", got, want)
	}
	d, ok := adm.get(q + ".dl")
	if !ok || d.MessageId != "huge" || d.Headers[runtime.HeaderDeadLetterAttempts] != "3" {
		t.Errorf("dead letter %v (%v), want message huge with 3 attempts", d.Headers, ok)
	}
	if st := a.stats(q); st.Retried != 0 || st.Delivered != 1 {
		t.Errorf("stats = %+v, want 1 delivery and no retry", st)
	}
}
