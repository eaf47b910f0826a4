package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// queue_type=quorum declares a quorum queue. Retries go through wait queue
// copies, which the quorum queue sees as new messages; its own delivery
// count (x-delivery-count, which x-delivery-limit caps) only counts
// redeliveries, and our attempt number ignores it.
func TestQuorumQueue(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("quorum")
	name := "streamgen-test-quorum-" + randomHex(4)
	b := New(brokerURL(), WithConnectionName(name), WithReconnectBackoff(50*time.Millisecond, time.Second, 0.2))

	var mu sync.Mutex
	var seen []runtime.Metadata
	firstOfTwo := make(chan struct{}, 1)
	release := make(chan struct{})
	h := runtime.Handle("Job", runtime.Policy{MaxAttempts: 3}, func(ctx context.Context, j *job, md runtime.Metadata) runtime.Outcome {
		mu.Lock()
		seen = append(seen, md)
		mu.Unlock()
		switch {
		case j.ID == 1 && md.Attempt == 1:
			return runtime.Retry().Because(errFailed)
		case j.ID == 2 && !cameBack(md):
			// Held until the broker has taken the connection away.
			firstOfTwo <- struct{}{}
			<-release
		}
		return runtime.Ack()
	})
	s := sub(q, 200*time.Millisecond, h)
	s.QueueType = runtime.QuorumQueue
	s.Concurrency = 2 // one worker stays held while the other takes the redelivery
	a := runApp(t, b, s)
	// Declaring it as a quorum queue again succeeds only if it is one, with
	// the delivery limit of its max_attempts.
	adm.declare(q, withDelayedRetry(adm, amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int64(3)}, 200))

	publishJob(t, adm, q, "Job", job{ID: 1})
	testkit.Eventually(t, "job 1 to succeed on its second attempt", func() bool { return a.stats(q).Acked == 1 })
	mu.Lock()
	retried := seen[len(seen)-1]
	mu.Unlock()
	if retried.Attempt != 2 {
		t.Errorf("job 1 acked on attempt %d, want 2", retried.Attempt)
	}
	if c := retried.Headers["x-delivery-count"]; c != "" && c != "0" {
		t.Errorf("the retry copy has x-delivery-count %q; a copy is a new message to the quorum queue", c)
	}

	publishJob(t, adm, q, "Job", job{ID: 2})
	<-firstOfTwo
	if n := testkit.CloseConnections(t, name+" (consume)"); n != 1 {
		t.Fatalf("closed %d consuming connections, want 1", n)
	}
	// The broker counts the return (x-delivery-count 1), so job 2 is set
	// aside on the suspect queue, and runs alone from there once the
	// handler still running returns.
	testkit.Eventually(t, "job 2 to be set aside", func() bool { return a.stats(q).Released == 1 })
	close(release)
	testkit.Eventually(t, "job 2 to be delivered again and acked", func() bool { return a.stats(q).Acked == 2 })
	mu.Lock()
	again := seen[len(seen)-1]
	mu.Unlock()
	if again.Headers[adapter.HeaderCrashes] != "1" || again.Headers["x-delivery-count"] != "" {
		t.Errorf("the second delivery of job 2 has %s %q and x-delivery-count %q; want 1 crash counted, on a copy", adapter.HeaderCrashes, again.Headers[adapter.HeaderCrashes], again.Headers["x-delivery-count"])
	}
	if again.Attempt != 1 {
		t.Errorf("redelivery counts as attempt %d; a redelivery is not a retry, want 1", again.Attempt)
	}
}

// A quorum subscription declares its wait queue and its dead-letter queue
// as quorum queues too, with x-delivery-limit and x-single-active-consumer
// on its own queue; an exhausted message goes through the quorum wait
// queue and lands parked.
func TestQuorumSubscriptionDeclaresEveryQueueQuorum(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("quorum-all")
	var c calls
	s := sub(q, 50*time.Millisecond, handler("Job", runtime.Policy{MaxAttempts: 2, DeadLetter: q + ".dl"}, &c, alwaysFail))
	s.QueueType = runtime.QuorumQueue
	s.DeliveryLimit = 3
	s.SingleActiveConsumer = true
	a := runApp(t, newTestBroker(), s)
	// Declaring a queue again succeeds only with the arguments it has.
	adm.declare(q, withDelayedRetry(adm, amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int64(3), "x-single-active-consumer": true,
		"x-dead-letter-exchange": "", "x-dead-letter-routing-key": q + ".dl", "x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish"}, 50))
	adm.declare(q+".retry", amqp.Table{"x-queue-type": "quorum", "x-message-ttl": int64(50), "x-dead-letter-exchange": "",
		"x-dead-letter-routing-key": q, "x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish"})
	dl := amqp.Table{"x-queue-type": "quorum"}
	if adm.version().atLeast(4, 0) {
		dl["x-delivery-limit"] = int64(-1) // no limit: reading a letter never drops it
	}
	adm.declare(q+".dl", dl)

	publishJob(t, adm, q, "Job", job{ID: 1})
	testkit.Eventually(t, "the job to be parked after two attempts", func() bool { return a.stats(q).Parked == 1 })
	if got := c.attempts(); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("attempts %v, want [1 2]", got)
	}
	if d, ok := adm.get(q + ".dl"); !ok || d.Headers[runtime.HeaderDeadLetterAttempts] != int64(2) && fmt.Sprint(d.Headers[runtime.HeaderDeadLetterAttempts]) != "2" {
		t.Errorf("dead-letter queue holds %v (found %v), want the job parked after 2 attempts", d.Headers, ok)
	}
}

// Drift on the quorum arguments is reported like any other argument: the
// queue, the argument, both values and the fix.
func TestQuorumArgumentDrift(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	var c calls
	quorum := func(q string) *runtime.Subscription {
		s := sub(q, time.Second, handler("Job", runtime.Policy{MaxAttempts: 2}, &c, alwaysAck))
		s.QueueType = runtime.QuorumQueue
		return s
	}
	for _, tc := range []struct {
		name     string
		existing func(q string)
		change   func(s *runtime.Subscription)
		want     func(q string) string
	}{
		{"another delivery limit",
			func(q string) { adm.declare(q, amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int64(3)}) },
			func(s *runtime.Subscription) { s.DeliveryLimit = 5 },
			func(q string) string {
				return "queue " + q + " exists with x-delivery-limit 3 but subscription " + q + " declares it with x-delivery-limit 5: a queue's arguments never change: set delivery_limit=3 to match"
			}},
		{"a single active consumer added",
			func(q string) { adm.declare(q, amqp.Table{"x-queue-type": "quorum"}) },
			func(s *runtime.Subscription) { s.SingleActiveConsumer = true },
			func(q string) string {
				return "queue " + q + " exists with x-single-active-consumer not set but subscription " + q + " declares it with x-single-active-consumer true: a queue's arguments never change: make single_active_consumer match"
			}},
		{"a classic wait queue left from before",
			func(q string) {
				adm.declare(q+".retry", amqp.Table{"x-message-ttl": int64(1000), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": q})
			},
			func(*runtime.Subscription) {},
			func(q string) string {
				// The broker names the first argument that differs.
				return "wait queue " + q + ".retry exists with x-overflow not set but subscription " + q + " declares it with x-overflow reject-publish: " +
					"the wait queues of a quorum subscription are quorum queues: delete it when empty (rabbitmqctl delete_queue " + q + ".retry) so that it is declared again as one"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := adm.queue("quorum-drift")
			tc.existing(q)
			s := quorum(q)
			tc.change(s)
			err := startupError(t, s)
			var te *TopologyError
			if !errors.As(err, &te) {
				t.Fatalf("startup error %v, want a TopologyError", err)
			}
			if !strings.Contains(err.Error(), tc.want(q)) {
				t.Errorf("startup error:\n%v\nwant it to say:\n%s", err, tc.want(q))
			}
		})
	}
}

// With single_active_consumer, one of two workers gets every message while
// the other stands by.
func TestSingleActiveConsumer(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("sac")
	var first, second calls
	s1 := sub(q, 0, handler("Job", runtime.Policy{}, &first, alwaysAck))
	s1.SingleActiveConsumer = true
	s2 := sub(q, 0, handler("Job", runtime.Policy{}, &second, alwaysAck))
	s2.SingleActiveConsumer = true
	runApp(t, newTestBroker(), s1)
	runApp(t, newTestBroker(), s2)
	const n = 40
	for i := range n {
		publishJob(t, adm, q, "Job", job{ID: i})
	}
	testkit.Eventually(t, "every job to be handled", func() bool { return first.len()+second.len() == n })
	if first.len() != n || second.len() != 0 {
		t.Errorf("the workers handled %d and %d jobs, want %d and 0: the second only stands by", first.len(), second.len(), n)
	}
}

// withDelayedRetry adds to args, the arguments of a quorum subscription's
// queue, the delayed-retry arguments it has on a broker whose quorum queues
// wait out a retry themselves (RabbitMQ 4.3 and later), for a retry delay
// of ms milliseconds.
func withDelayedRetry(adm *admin, args amqp.Table, ms int64) amqp.Table {
	if adm.version().queues().DelayedRetry() {
		args["x-delayed-retry-type"] = "returned"
		args["x-delayed-retry-min"] = ms
		args["x-delayed-retry-max"] = ms
	}
	return args
}
