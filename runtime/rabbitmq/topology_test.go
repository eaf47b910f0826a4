package rabbitmq

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

func TestParseMismatch(t *testing.T) {
	testkit.NoLeaks(t)
	tests := []struct {
		reason string
		want   mismatch
	}{
		{"PRECONDITION_FAILED - inequivalent arg 'x-message-ttl' for queue 'jobs.retry' in vhost '/': received '5000' but current is '10000'",
			mismatch{argument: "x-message-ttl", want: "5000", wantSet: true, have: "10000"}},
		{"PRECONDITION_FAILED - inequivalent arg 'x-dead-letter-exchange' for queue 'jobs' in vhost '/': received none but current is the value '' of type 'longstr'",
			mismatch{argument: "x-dead-letter-exchange", have: "''"}},
		{"PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'exp.c' in vhost 'prod': received the value 'quorum' of type 'longstr' but current is none",
			mismatch{argument: "x-queue-type", want: "quorum", wantSet: true}},
		{"PRECONDITION_FAILED - inequivalent arg 'durable' for queue 'it's' in vhost '/': received 'true' but current is 'false'",
			mismatch{argument: "durable", want: "true", wantSet: true, have: "false"}},
		{"PRECONDITION_FAILED - something else entirely", mismatch{}},
	}
	for _, tt := range tests {
		if got := parseMismatch(tt.reason); got != tt.want {
			t.Errorf("parseMismatch(%q)\n got %+v\nwant %+v", tt.reason, got, tt.want)
		}
	}
}

func TestTopologyErrorText(t *testing.T) {
	testkit.NoLeaks(t)
	wait := adapter.Queue{Name: "jobs.retry", Role: adapter.WaitRole, TTL: 5 * time.Second, Subscription: "jobs"}
	e := newTopologyError(wait, parseMismatch("PRECONDITION_FAILED - inequivalent arg 'x-message-ttl' for queue 'jobs.retry' in vhost '/': received '5000' but current is '10000'"), &amqp.Error{Code: 406})
	want := "rabbitmq: wait queue jobs.retry exists with x-message-ttl 10000 ms but retry_delay is 5s: delete it when empty (rabbitmqctl delete_queue jobs.retry) or keep retry_delay=10s"
	if e.Error() != want {
		t.Errorf("wait queue TTL error:\n got %s\nwant %s", e, want)
	}

	dl := adapter.Queue{Name: "jobs.dl", Role: adapter.DeadLetterRole, Subscription: "jobs"}
	e = newTopologyError(dl, parseMismatch("PRECONDITION_FAILED - inequivalent arg 'x-max-length' for queue 'jobs.dl' in vhost '/': received none but current is the value '10' of type 'long'"), &amqp.Error{Code: 406})
	want = "rabbitmq: dead-letter queue jobs.dl exists with x-max-length 10 but subscription jobs declares it with x-max-length not set: delete it when empty (rabbitmqctl delete_queue jobs.dl) so that it is declared as a plain durable queue, or name another dead_letter"
	if e.Error() != want {
		t.Errorf("dead-letter queue error:\n got %s\nwant %s", e, want)
	}

	suspects := adapter.Queue{Name: "jobs.suspect", Role: adapter.SuspectRole, Subscription: "jobs"}
	e = newTopologyError(suspects, parseMismatch("PRECONDITION_FAILED - inequivalent arg 'x-single-active-consumer' for queue 'jobs.suspect' in vhost '/': received none but current is the value 'true' of type 'bool'"), &amqp.Error{Code: 406})
	want = "rabbitmq: suspect queue jobs.suspect exists with x-single-active-consumer true but subscription jobs declares it with x-single-active-consumer not set: a suspect queue has the subscription's queue type and single_active_consumer and nothing else: make single_active_consumer match, or move its messages to the subscription's queue and delete it when empty (rabbitmqctl delete_queue jobs.suspect) so that it is declared again"
	if e.Error() != want {
		t.Errorf("suspect queue error:\n got %s\nwant %s", e, want)
	}

	q := adapter.Queue{Name: "jobs", Role: adapter.ConsumedRole, Subscription: "jobs", Arguments: map[string]any{"x-queue-type": "quorum"}}
	e = newTopologyError(q, parseMismatch("PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'jobs' in vhost '/': received the value 'quorum' of type 'longstr' but current is none"), &amqp.Error{Code: 406})
	want = "rabbitmq: queue jobs exists with x-queue-type not set but subscription jobs declares it with x-queue-type quorum: a queue's type never changes: move its messages elsewhere and delete it when empty (rabbitmqctl delete_queue jobs), or set queue_type to match"
	if e.Error() != want {
		t.Errorf("queue type error:\n got %s\nwant %s", e, want)
	}
}

func TestQueueNames(t *testing.T) {
	testkit.NoLeaks(t)
	noop := func(context.Context, *struct{}, runtime.Metadata) runtime.Outcome { return runtime.Ack() }
	jobs := &runtime.Subscription{
		Name: "jobs", QueueType: runtime.QuorumQueue, RetryDelays: []time.Duration{time.Second, time.Minute},
		Handlers: []runtime.Handler{
			runtime.Handle("A", runtime.Policy{MaxAttempts: 3, DeadLetter: "jobs.dl"}, noop),
			runtime.Handle("B", runtime.Policy{DeadLetter: "parked"}, noop),
		},
	}
	parked := &runtime.Subscription{Name: "parked", Handlers: []runtime.Handler{runtime.Handle("A", runtime.Policy{}, noop)}}
	if got, want := QueueNames(jobs, parked), []string{"jobs", "parked", "jobs.retry.1s", "jobs.retry.1m", "jobs.suspect", "parked.suspect", "jobs.dl"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("QueueNames = %v, want %v", got, want)
	}
	if got := QueueNames(); len(got) != 0 {
		t.Errorf("QueueNames() = %v, want none", got)
	}
}

// What a quorum dead-letter queue is declared with on RabbitMQ 4 is
// adapter.Topology's for the broker's version, and the fix for one that
// lacks its delivery limit sets the value declared: -1.
func TestTheDeclaredArgumentsAreTheTopologysForTheVersion(t *testing.T) {
	testkit.NoLeaks(t)
	v4 := versionOf(amqp.Table{"version": "4.1.2"})
	if v4.queues() != (adapter.RabbitMQVersion{Major: 4, Minor: 1}) {
		t.Errorf("queues() of 4.1.2 = %+v", v4.queues())
	}
	noop := func(context.Context, *struct{}, runtime.Metadata) runtime.Outcome { return runtime.Ack() }
	jobs := &runtime.Subscription{Name: "jobs", QueueType: runtime.QuorumQueue,
		Handlers: []runtime.Handler{runtime.Handle("A", runtime.Policy{MaxAttempts: 3, DeadLetter: "jobs.dl"}, noop)}}
	queues := adapter.Topology([]*runtime.Subscription{jobs}, v4.queues())
	dl := queues[len(queues)-1]
	if dl.Name != "jobs.dl" || fmt.Sprint(dl.Arguments) != "map[x-delivery-limit:-1 x-queue-type:quorum]" {
		t.Fatalf("dead-letter queue on 4.1 = %+v", dl)
	}
	if fix := lackingFix(dl, dl.Defaulted); !strings.Contains(fix, `'{"delivery-limit":-1}'`) {
		t.Errorf("fix for a dead-letter queue without its delivery limit = %s", fix)
	}
}
