package rabbitmq

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// parkFirst parks job 1 at once and acks every other job.
func parkFirst(j *job, _ runtime.Metadata) runtime.Outcome {
	if j.ID == 1 {
		return runtime.DeadLetterNow().Because(errFailed)
	}
	return runtime.Ack()
}

// settleErrors returns the error texts Consumer.Settle logged.
func settleErrors(a *app) []string {
	var out []string
	for _, r := range a.logs.Records() {
		if r.Level == slog.LevelError && strings.HasPrefix(r.Message, "could not ") {
			out = append(out, r.Attr("err"))
		}
	}
	return out
}

func anyContains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// A dead-letter queue that vanished after startup makes the copy
// unroutable: the original is nacked without requeue (the operator's DLX
// on the queue gets it) and the prefetch slot is freed.
func TestUnroutableDeadLetterNacksWithoutRequeue(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("unroutable", ".retry", ".dl", ".bdl")
	adm.declare(q+".bdl", nil)
	adm.declare(q, amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": q + ".bdl"})
	var c calls
	s := sub(q, 0, handler("Job", runtime.Policy{DeadLetter: q + ".dl"}, &c, parkFirst))
	s.Prefetch = 1
	a := runApp(t, newTestBroker(), s)
	adm.delete(q + ".dl")

	publishJob(t, a.broker, q, "Job", job{ID: 1}, runtime.WithMessageID("u-1"))
	testkit.Eventually(t, "the original to reach the queue's own DLX", func() bool { return adm.ready(q+".bdl") == 1 })
	if d, _ := adm.get(q + ".bdl"); d.MessageId != "u-1" {
		t.Errorf("DLX received %q, want u-1", d.MessageId)
	}
	testkit.Eventually(t, "the failure to be logged", func() bool { return len(settleErrors(a)) == 1 })
	if errs := settleErrors(a); len(errs) != 1 || !strings.Contains(errs[0], "unroutable; nacked without requeue") {
		t.Errorf("settle errors = %q, want one saying the dead-letter queue is unroutable and the original was nacked without requeue", errs)
	}
	testkit.Eventually(t, "the failure to be counted", func() bool { return a.stats(q).Failed == 1 })
	if st := a.stats(q); st.Failed != 1 || st.Parked != 0 {
		t.Errorf("stats = %+v, want 1 failed, 0 parked", st)
	}

	publishJob(t, a.broker, q, "Job", job{ID: 2})
	testkit.Eventually(t, "the next message to be handled (prefetch 1 is free again)", func() bool { return a.stats(q).Acked == 1 })
	if c.len() != 2 {
		t.Errorf("handler ran %d times, want 2 (no redelivery of the unroutable one)", c.len())
	}
}

// A broker nack (the dead-letter queue rejects publishes) requeues the
// original; once the queue accepts again, the message is parked.
func TestBrokerNackRequeuesTheOriginal(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("nacked")
	var c calls
	s := sub(q, 0, handler("Job", runtime.Policy{DeadLetter: q + ".dl"}, &c, parkFirst))
	s.Prefetch = 1
	a := runApp(t, newTestBroker(), s)

	policy := setPolicy(t, q+".dl", `{"max-length":0,"overflow":"reject-publish"}`)
	testkit.Eventually(t, "the policy to make the broker refuse publishes", func() bool {
		return !adm.tryPublish(q+".dl", amqp.Publishing{Body: []byte("probe")})
	})
	publishJob(t, a.broker, q, "Job", job{ID: 1}, runtime.WithMessageID("n-1"))
	// The original comes back (the broker requeued it), is set aside on the
	// suspect queue, and runs again from there.
	testkit.Eventually(t, "two refused copies and a redelivery", func() bool {
		for _, md := range c.metadata() {
			if cameBack(md) && a.stats(q).Failed >= 2 {
				return true
			}
		}
		return false
	})
	if errs := settleErrors(a); !anyContains(errs, ErrNacked.Error()) || !anyContains(errs, "nacked with requeue") {
		t.Errorf("settle errors = %q, want a broker nack and a requeue", errs)
	}
	for _, md := range c.metadata() {
		if md.Attempt != 1 {
			t.Errorf("a requeued delivery counts as attempt %d; only retry copies count", md.Attempt)
		}
	}

	clearPolicy(t, policy)
	testkit.Eventually(t, "the message to be parked once the queue accepts", func() bool { return adm.ready(q+".dl") == 1 })
	if d, _ := adm.get(q + ".dl"); d.MessageId != "n-1" {
		t.Errorf("parked %q, want n-1", d.MessageId)
	}
	publishJob(t, a.broker, q, "Job", job{ID: 2})
	testkit.Eventually(t, "the next message to be handled (prefetch 1 is free again)", func() bool { return a.stats(q).Acked == 1 })
	if st := a.stats(q); st.Parked != 1 {
		t.Errorf("stats = %+v, want 1 parked", st)
	}
}

// A copy the broker never confirms counts as not sent: the original is
// requeued, and handled again; once confirms flow, the retry goes through.
// The publishing channel is a stand-in that withholds confirms, since a
// real broker cannot be made to.
func TestMissingConfirmRequeuesTheOriginal(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("noconfirm")
	b := newTestBroker(WithConfirmTimeout(200 * time.Millisecond))
	var confirming atomic.Bool
	var published atomic.Int64
	b.pub.open = func(context.Context) (publishChannel, error) {
		return newFakeChannel(func(seq uint64, key string, msg amqp.Publishing) (*amqp.Return, *amqp.Confirmation) {
			published.Add(1)
			if confirming.Load() {
				adm.publish(key, msg) // the copy reaches the broker
				return nil, ack(seq)
			}
			return nil, nil
		}), nil
	}
	var c calls
	s := sub(q, time.Minute, handler("Job", runtime.Policy{MaxAttempts: 2}, &c, func(j *job, _ runtime.Metadata) runtime.Outcome {
		if j.ID == 1 {
			return runtime.Retry().Because(errFailed)
		}
		return runtime.Ack()
	}))
	s.Prefetch = 1
	a := runApp(t, b, s)

	publishJob(t, adm, q, "Job", job{ID: 1})
	// The original comes back, and its copy to the suspect queue is not
	// confirmed either.
	testkit.Eventually(t, "two unconfirmed copies", func() bool { return a.stats(q).Failed >= 2 })
	if errs := settleErrors(a); !anyContains(errs, ErrNoConfirm.Error()) || !anyContains(errs, "nacked with requeue") {
		t.Errorf("settle errors = %q, want a missing confirm and a requeue", errs)
	}
	confirming.Store(true)
	testkit.Eventually(t, "the original to run again", func() bool {
		mds := c.metadata()
		return len(mds) >= 2 && cameBack(mds[len(mds)-1])
	})
	testkit.Eventually(t, "the retry to go through once confirmed", func() bool { return a.stats(q).Retried == 1 })
	testkit.Eventually(t, "the original to be acked", func() bool { return adm.ready(q) == 0 })
	publishJob(t, adm, q, "Job", job{ID: 2})
	testkit.Eventually(t, "the next message to be handled (prefetch 1 is free again)", func() bool { return a.stats(q).Acked == 1 })
	for _, md := range c.metadata() {
		if md.Attempt != 1 {
			t.Errorf("attempt %d seen; no copy reached the broker, so every delivery is attempt 1", md.Attempt)
		}
	}
	if published.Load() < 3 {
		t.Errorf("%d publishes reached the stand-in channel, want at least 3", published.Load())
	}
}
