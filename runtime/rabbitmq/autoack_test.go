package rabbitmq

import (
	"slices"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// ack=auto is at-most-once: a failure is not retried and the message is
// not redelivered; poison with a dead-letter queue is still parked.
func TestAutoAckIsAtMostOnce(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("auto")
	var c calls
	s := sub(q, 0, handler("Job", runtime.Policy{DeadLetter: q + ".dl"}, &c, func(j *job, _ runtime.Metadata) runtime.Outcome {
		if j.ID == 1 {
			return runtime.Retry().Because(errFailed)
		}
		return runtime.Ack()
	}))
	s.AutoAck = true
	a := runApp(t, newTestBroker(), s)
	if adm.exists(q + ".retry") {
		t.Error("ack=auto declared a wait queue")
	}
	publishJob(t, a.broker, q, "Job", job{ID: 1})
	publishJob(t, a.broker, q, "Job", job{ID: 2})
	adm.publish(q, amqp.Publishing{MessageId: "poison", Type: "Job", Body: []byte("not json")})
	testkit.Eventually(t, "the poison to be parked", func() bool { return adm.ready(q+".dl") == 2 })
	testkit.Eventually(t, "the second job to be handled", func() bool { return a.stats(q).Acked == 1 })

	got := map[string]bool{}
	for range 2 {
		d, _ := adm.get(q + ".dl")
		got[d.MessageId] = true
	}
	if !got["poison"] || len(got) != 2 {
		t.Errorf("parked %v, want the poison and the failed job", got)
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	ids := slices.Clone(c.ids)
	c.mu.Unlock()
	slices.Sort(ids)
	if !slices.Equal(ids, []int{1, 2}) {
		t.Errorf("handled %v, want each job once", ids)
	}
	if n := adm.ready(q); n != 0 {
		t.Errorf("%d messages back in the queue; ack=auto must not redeliver", n)
	}
	if st := a.stats(q); st.Retried != 0 || st.Parked != 2 {
		t.Errorf("stats = %+v, want no retries, 2 parked", st)
	}
}

// ack=auto with retries is refused before anything is declared.
func TestAutoAckWithRetriesIsRefused(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("autoretry")
	var c calls
	s := sub(q, time.Second, handler("Job", runtime.Policy{MaxAttempts: 3}, &c, alwaysAck))
	s.AutoAck = true
	err := startupError(t, s)
	if !contains(err.Error(), "ack=auto is at-most-once and cannot retry") {
		t.Errorf("startup error = %v", err)
	}
	if adm.exists(q) {
		t.Error("the queue was declared for an invalid subscription")
	}

}
