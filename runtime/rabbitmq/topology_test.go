package rabbitmq

import (
	"context"
	"fmt"
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
	wait := queueSpec{name: "jobs.retry", role: waitQueue, ttl: 5 * time.Second, subscription: "jobs"}
	e := newTopologyError(wait, parseMismatch("PRECONDITION_FAILED - inequivalent arg 'x-message-ttl' for queue 'jobs.retry' in vhost '/': received '5000' but current is '10000'"), &amqp.Error{Code: 406})
	want := "rabbitmq: wait queue jobs.retry exists with x-message-ttl 10000 ms but retry_delay is 5s: delete it when empty (rabbitmqctl delete_queue jobs.retry) or keep retry_delay=10s"
	if e.Error() != want {
		t.Errorf("wait queue TTL error:\n got %s\nwant %s", e, want)
	}

	dl := queueSpec{name: "jobs.dl", role: deadLetterQueue, subscription: "jobs"}
	e = newTopologyError(dl, parseMismatch("PRECONDITION_FAILED - inequivalent arg 'x-max-length' for queue 'jobs.dl' in vhost '/': received none but current is the value '10' of type 'long'"), &amqp.Error{Code: 406})
	want = "rabbitmq: dead-letter queue jobs.dl exists with x-max-length 10 but subscription jobs declares it with x-max-length not set: delete it when empty (rabbitmqctl delete_queue jobs.dl) so that it is declared as a plain durable queue, or name another dead_letter"
	if e.Error() != want {
		t.Errorf("dead-letter queue error:\n got %s\nwant %s", e, want)
	}

	suspects := queueSpec{name: "jobs.suspect", role: suspectQueue, subscription: "jobs"}
	e = newTopologyError(suspects, parseMismatch("PRECONDITION_FAILED - inequivalent arg 'x-single-active-consumer' for queue 'jobs.suspect' in vhost '/': received none but current is the value 'true' of type 'bool'"), &amqp.Error{Code: 406})
	want = "rabbitmq: suspect queue jobs.suspect exists with x-single-active-consumer true but subscription jobs declares it with x-single-active-consumer not set: a suspect queue has the subscription's queue type and single_active_consumer and nothing else: make single_active_consumer match, or move its messages to the subscription's queue and delete it when empty (rabbitmqctl delete_queue jobs.suspect) so that it is declared again"
	if e.Error() != want {
		t.Errorf("suspect queue error:\n got %s\nwant %s", e, want)
	}

	q := queueSpec{name: "jobs", role: consumedQueue, subscription: "jobs", args: amqp.Table{"x-queue-type": "quorum"}}
	e = newTopologyError(q, parseMismatch("PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'jobs' in vhost '/': received the value 'quorum' of type 'longstr' but current is none"), &amqp.Error{Code: 406})
	want = "rabbitmq: queue jobs exists with x-queue-type not set but subscription jobs declares it with x-queue-type quorum: a queue's type never changes: move its messages elsewhere and delete it when empty (rabbitmqctl delete_queue jobs), or set queue_type to match"
	if e.Error() != want {
		t.Errorf("queue type error:\n got %s\nwant %s", e, want)
	}
}

func TestTopologyOfSubscriptions(t *testing.T) {
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
	specs := topology([]*runtime.Subscription{jobs, parked})
	var names []string
	for _, s := range specs {
		names = append(names, s.name+":"+s.role.String())
	}
	want := []string{"jobs:queue", "parked:queue", "jobs.retry.1s:wait queue", "jobs.retry.1m:wait queue", "jobs.suspect:suspect queue", "parked.suspect:suspect queue", "jobs.dl:dead-letter queue"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("topology = %v, want %v", names, want)
	}
	if specs[0].args["x-queue-type"] != "quorum" || specs[1].args != nil {
		t.Errorf("queue args = %v, %v; want x-queue-type quorum on jobs only", specs[0].args, specs[1].args)
	}
	w := specs[2].args
	if w["x-message-ttl"] != int64(1000) || w["x-dead-letter-exchange"] != "" || w["x-dead-letter-routing-key"] != "jobs" {
		t.Errorf("wait queue args = %v", w)
	}
	if fmt.Sprint(w) != fmt.Sprint(adapter.WaitQueueArguments(jobs, adapter.WaitQueues(jobs)[0])) {
		t.Errorf("wait queue args = %v, want the subscription's WaitQueueArguments", w)
	}
	if fmt.Sprint(specs[4].args) != "map[x-queue-type:quorum]" || specs[5].args != nil {
		t.Errorf("suspect queue args = %v, %v; want a quorum queue for jobs, none for parked", specs[4].args, specs[5].args)
	}
	if args, defaulted := specs[4].argsFor(serverVersion{major: 4}); fmt.Sprint(args) != "map[x-delivery-limit:-1 x-queue-type:quorum]" || fmt.Sprint(defaulted) != "[x-delivery-limit]" {
		t.Errorf("on RabbitMQ 4 a quorum suspect queue is declared with %v (defaulted %v), want no delivery limit", args, defaulted)
	}
	if got, want := QueueNames(jobs, parked), []string{"jobs", "parked", "jobs.retry.1s", "jobs.retry.1m", "jobs.suspect", "parked.suspect", "jobs.dl"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("QueueNames = %v, want %v", got, want)
	}
	if got := QueueNames(); len(got) != 0 {
		t.Errorf("QueueNames() = %v, want none", got)
	}
}
