package rabbitmq

import (
	"log/slog"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// quorumWithDeadLetter is a quorum subscription on q whose handler fails
// every time, with max_attempts 3 (so a delivery limit of 3) and q.dl.
func quorumWithDeadLetter(q string, c *calls) *runtime.Subscription {
	s := sub(q, 50*time.Millisecond, handler("Job", runtime.Policy{MaxAttempts: 3, DeadLetter: q + ".dl"}, c, alwaysFail))
	s.QueueType = runtime.QuorumQueue
	return s
}

// The runner hands a delivery back in two ways, and the broker counts
// them apart: Requeue (a handler ran and its retry copy could not be sent)
// rejects, which every RabbitMQ counts toward a quorum queue's delivery
// limit; handing back an unstarted delivery at shutdown nacks, which
// RabbitMQ 4.3 no longer counts (earlier versions do), since it cost the
// message no attempt.
func TestRequeuesCountTowardTheDeliveryLimitAndReleasesDoNotOn43(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("requeue-count", ".dl")
	adm.declare(q, amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int64(5)})
	adm.publish(q, amqp.Publishing{Type: "Job", Body: []byte(`{"id":1}`)})
	ch, err := adm.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ch.Close() }()
	if err := ch.Qos(1, 0, false); err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(q, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	acks := newAcker(ch, 1, slog.New(slog.DiscardHandler))
	next := func() amqp.Delivery {
		t.Helper()
		select {
		case d := <-deliveries:
			return d
		case <-time.After(patience):
			t.Fatal("no delivery")
		}
		return amqp.Delivery{}
	}
	r := &runner{}
	d := next()
	in := &inbound{amqp: d, acks: acks}
	in.d.Raw, in.d.Source = &in.amqp, in
	if err := r.Requeue(t.Context(), &in.d); err != nil {
		t.Fatal(err)
	}
	d = next()
	if got := returned(&d); got != 1 {
		t.Fatalf("after Requeue the delivery was returned %d times (x-delivery-count %v), want 1: a requeue counts", got, d.Headers["x-delivery-count"])
	}
	in = &inbound{amqp: d, acks: acks}
	in.d.Raw, in.d.Source = &in.amqp, in
	if err := r.Release(t.Context(), &in.d); err != nil {
		t.Fatal(err)
	}
	d = next()
	want := 2
	if adm.version().atLeast(4, 3) {
		want = 1
	}
	if got := returned(&d); got != want {
		t.Errorf("on RabbitMQ %v, after a release the delivery was returned %d times, want %d", adm.version(), got, want)
	}
	if err := d.Ack(false); err != nil {
		t.Fatal(err)
	}
}

// A quorum dead-letter queue drops no letter however often it is read and
// handed back, by basic.reject with requeue or by a closed channel, which
// every RabbitMQ counts toward a delivery limit: RabbitMQ 4 would give it
// a limit of 20 unless declared without one.
func TestADeadLetterQueueNeverDropsALetterReadAndHandedBack(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("dl-reads")
	var c calls
	runApp(t, newTestBroker(), quorumWithDeadLetter(q, &c))
	adm.publish(q, amqp.Publishing{Type: "Unknown", Body: []byte(`{"id":1}`), MessageId: "poison-1"})
	testkit.Eventually(t, "the poison message to be parked", func() bool { return adm.ready(q+".dl") == 1 })
	for i := range 30 {
		ch, err := adm.conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		// A closed channel hands its letter back asynchronously: the next
		// read may come first, and finds the queue empty for a moment.
		var d amqp.Delivery
		ok := false
		for deadline := time.Now().Add(testkit.Patience); !ok && time.Now().Before(deadline); {
			if d, ok, err = ch.Get(q+".dl", false); err != nil {
				t.Fatalf("read %d: %v", i+1, err)
			}
			if !ok {
				time.Sleep(10 * time.Millisecond)
			}
		}
		if !ok {
			t.Fatalf("read %d: the letter is gone", i+1)
		}
		if i%2 == 0 {
			if err := d.Reject(true); err != nil {
				t.Fatal(err)
			}
		}
		_ = ch.Close() // hands back an unsettled letter
	}
	testkit.Eventually(t, "the letter to be back", func() bool { return adm.ready(q+".dl") == 1 })
	if d, ok := adm.get(q + ".dl"); !ok || d.MessageId != "poison-1" {
		t.Errorf("after 30 reads: %v, %v; want the letter poison-1", d.MessageId, ok)
	}
}

// A message the broker dead-letters itself (here: handed back past the
// delivery limit by a consumer other than streamgen's) lands in the
// subscription's dead-letter queue, and brokerExplanation explains it as
// the runtime explains its own.
func TestALetterTheBrokerParkedIsExplained(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("broker-parked")
	var c calls
	a := startApp(t, newTestBroker(), 20*time.Second, quorumWithDeadLetter(q, &c))
	a.waitReady()
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	adm.publish(q, amqp.Publishing{Type: "Job", Body: []byte(`{"id":1}`), MessageId: "m-1", Headers: amqp.Table{runtime.RetryCountHeader: "1"}})
	rejects := 0
	for deadline := time.Now().Add(patience); rejects < 10 && adm.ready(q+".dl") == 0 && time.Now().Before(deadline); {
		if err := adm.channel(func(ch *amqp.Channel) error {
			d, ok, err := ch.Get(q, false)
			if err != nil || !ok {
				time.Sleep(10 * time.Millisecond)
				return err
			}
			rejects++
			return d.Reject(true)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if rejects != 4 {
		t.Errorf("the broker dead-lettered the message after %d rejects, want 4 (delivery limit 3)", rejects)
	}
	var letter amqp.Delivery
	testkit.Eventually(t, "the broker to park the message", func() bool {
		var ok bool
		letter, ok = adm.get(q + ".dl")
		return ok
	})
	h, ok := brokerExplanation(letter.Headers)
	if !ok {
		t.Fatalf("brokerExplanation does not recognise %v", letter.Headers)
	}
	want := map[string]string{
		runtime.HeaderDeadLetterReason:   "delivered more often than the delivery limit of " + q + " allows without being settled: the worker crashed or lost its connection each time (dead-lettered by the broker)",
		runtime.HeaderDeadLetterSource:   q,
		runtime.HeaderDeadLetterAttempts: "2",
		runtime.HeaderDeadLetterPoison:   "false",
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("%s = %q, want %q", k, h[k], v)
		}
	}
	if at, err := time.Parse(time.RFC3339, h[runtime.HeaderDeadLetterTime]); err != nil || time.Since(at) > time.Hour || time.Since(at) < -time.Hour {
		t.Errorf("%s = %q, want about now", runtime.HeaderDeadLetterTime, h[runtime.HeaderDeadLetterTime])
	}
}

func TestEachKindOfLetterIsExplained(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	own := amqp.Table{runtime.HeaderDeadLetterReason: "failed on attempt 3 of 3: boom", runtime.HeaderDeadLetterSource: "jobs",
		runtime.HeaderDeadLetterAttempts: "3", runtime.HeaderDeadLetterPoison: "false", runtime.HeaderDeadLetterTime: "2026-12-01T10:00:00.000Z",
		"x-death": []any{amqp.Table{"queue": "other", "reason": "rejected"}}}
	// A letter the runtime parked is explained by its own headers, even
	// with an x-death record of an earlier stay elsewhere.
	if l := letterOf(amqp.Delivery{Headers: own}); !l.Explained || l.ByBroker || l.Reason != "failed on attempt 3 of 3: boom" || l.Attempts != 3 || l.Source != "jobs" || !l.ParkedAt.Equal(at) {
		t.Errorf("a letter the runtime parked: %+v", l)
	}
	for reason, want := range map[string]string{
		"expired":  "expired in jobs before it was handled (dead-lettered by the broker)",
		"maxlen":   "jobs was full (dead-lettered by the broker)",
		"rejected": "rejected without requeue by a consumer of jobs (dead-lettered by the broker)",
		"odd":      `dead-lettered by the broker from jobs (x-death reason "odd")`,
	} {
		h, ok := brokerExplanation(amqp.Table{"x-death": []any{
			amqp.Table{"queue": "jobs", "reason": reason, "time": at, "count": int64(1)},
			amqp.Table{"queue": "jobs.retry", "reason": "expired", "time": at.Add(-time.Hour), "count": int64(2)},
		}})
		if !ok || h[runtime.HeaderDeadLetterReason] != want || h[runtime.HeaderDeadLetterSource] != "jobs" ||
			h[runtime.HeaderDeadLetterTime] != "2026-12-01T10:00:00.000Z" || h[runtime.HeaderDeadLetterAttempts] != "1" {
			t.Errorf("x-death reason %s: %v, %v", reason, h, ok)
		}
	}
	if h, ok := brokerExplanation(amqp.Table{"tenant": "acme"}); ok {
		t.Errorf("a message that is no dead letter: %v", h)
	}
}
