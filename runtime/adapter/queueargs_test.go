package adapter_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// retryingHandler is a handler of messageType under policy p that
// acknowledges.
func retryingHandler(messageType string, p runtime.Policy) runtime.Handler {
	return runtime.Handle(messageType, p, func(context.Context, *struct{}, runtime.Metadata) runtime.Outcome { return runtime.Ack() })
}

func TestWaitQueues(t *testing.T) {
	retrying := []runtime.Handler{retryingHandler("Job", runtime.Policy{MaxAttempts: 3})}
	for _, tc := range []struct {
		name string
		sub  runtime.Subscription
		want []adapter.WaitQueue
	}{
		{"no handler retries", runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{time.Second}, Handlers: []runtime.Handler{retryingHandler("Job", runtime.Policy{})}}, nil},
		{"the default delay", runtime.Subscription{Name: "jobs", Handlers: retrying}, []adapter.WaitQueue{{Name: "jobs.retry", TTL: runtime.DefaultRetryDelay}}},
		{"a single delay", runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{5 * time.Second}, Handlers: retrying}, []adapter.WaitQueue{{Name: "jobs.retry", TTL: 5 * time.Second}}},
		{"a ladder", runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{500 * time.Millisecond, 10 * time.Second, 90 * time.Second, 2 * time.Hour}, Handlers: retrying},
			[]adapter.WaitQueue{{Name: "jobs.retry.500ms", TTL: 500 * time.Millisecond}, {Name: "jobs.retry.10s", TTL: 10 * time.Second}, {Name: "jobs.retry.1m30s", TTL: 90 * time.Second}, {Name: "jobs.retry.2h", TTL: 2 * time.Hour}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := adapter.WaitQueues(&tc.sub); !slices.Equal(got, tc.want) {
				t.Errorf("WaitQueues() = %v, want %v", got, tc.want)
			}
		})
	}
	if runtime.DefaultRetryDelay != 10*time.Second {
		t.Errorf("DefaultRetryDelay = %v, the documented default is 10s", runtime.DefaultRetryDelay)
	}
}

func TestWaitQueueArguments(t *testing.T) {
	var v3 adapter.RabbitMQVersion // 3.x, or a version unknown
	jobs := &runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{1500 * time.Microsecond, time.Second},
		Handlers: []runtime.Handler{retryingHandler("Job", runtime.Policy{MaxAttempts: 3})}}
	qs := adapter.WaitQueues(jobs)
	for i, wantTTL := range []int64{2, 1000} {
		args := adapter.WaitQueueArguments(jobs, qs[i], v3)
		want := map[string]any{"x-message-ttl": wantTTL, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "jobs"}
		if fmt.Sprint(args) != fmt.Sprint(want) || args["x-message-ttl"] != wantTTL {
			t.Errorf("WaitQueueArguments(%s) = %#v, want %#v", qs[i].Name, args, want)
		}
	}
	if ttl := adapter.WaitQueueArguments(jobs, adapter.WaitQueue{Name: "jobs.retry", TTL: time.Microsecond}, v3)["x-message-ttl"]; ttl != int64(1) {
		t.Errorf("x-message-ttl of a 1µs wait = %v, want 1: 0 would expire copies at once", ttl)
	}
}

// A quorum subscription's wait queues are quorum queues that move expired
// copies back at least once, and its dead-letter queues are quorum queues.
func TestQuorumQueueArguments(t *testing.T) {
	var v3 adapter.RabbitMQVersion // 3.x, or a version unknown
	jobs := &runtime.Subscription{Name: "jobs", QueueType: runtime.QuorumQueue, DeliveryLimit: 4, SingleActiveConsumer: true,
		Handlers: []runtime.Handler{retryingHandler("Job", runtime.Policy{MaxAttempts: 3, DeadLetter: "jobs.dead"})}}
	if got, want := fmt.Sprint(adapter.QueueArguments(jobs, v3)), "map[x-dead-letter-exchange: x-dead-letter-routing-key:jobs.dead x-dead-letter-strategy:at-least-once x-delivery-limit:4 x-overflow:reject-publish x-queue-type:quorum x-single-active-consumer:true]"; got != want {
		t.Errorf("QueueArguments() = %s, want %s", got, want)
	}
	if limit := adapter.QueueArguments(jobs, v3)["x-delivery-limit"]; limit != int64(4) {
		t.Errorf("x-delivery-limit = %#v, want int64(4)", limit)
	}
	wait := adapter.WaitQueueArguments(jobs, adapter.WaitQueues(jobs)[0], v3)
	if got, want := fmt.Sprint(wait), "map[x-dead-letter-exchange: x-dead-letter-routing-key:jobs x-dead-letter-strategy:at-least-once x-message-ttl:10000 x-overflow:reject-publish x-queue-type:quorum]"; got != want {
		t.Errorf("WaitQueueArguments() = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(adapter.DeadLetterQueueArguments(jobs, v3)), "map[x-queue-type:quorum]"; got != want {
		t.Errorf("DeadLetterQueueArguments() = %s, want %s", got, want)
	}

	classic := &runtime.Subscription{Name: "jobs", Handlers: jobs.Handlers}
	if got, want := fmt.Sprint(adapter.QueueArguments(classic, v3)), "map[x-dead-letter-exchange: x-dead-letter-routing-key:jobs.dead]"; got != want {
		t.Errorf("a classic subscription's QueueArguments() = %s, want %s: it dead-letters, with no delivery limit", got, want)
	}
	noDL := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{retryingHandler("Job", runtime.Policy{MaxAttempts: 3})}}
	if args := adapter.QueueArguments(noDL, v3); args != nil {
		t.Errorf("QueueArguments() of a classic subscription with no dead_letter = %v, want nil", args)
	}
	if args := adapter.DeadLetterQueueArguments(classic, v3); args != nil {
		t.Errorf("a classic subscription's DeadLetterQueueArguments() = %v, want nil", args)
	}
	if _, ok := adapter.WaitQueueArguments(classic, adapter.WaitQueues(classic)[0], v3)["x-queue-type"]; ok {
		t.Error("a classic subscription's wait queue has an x-queue-type")
	}
	if got, want := fmt.Sprint(adapter.SuspectQueueArguments(jobs, v3)), "map[x-queue-type:quorum x-single-active-consumer:true]"; got != want {
		t.Errorf("a quorum subscription's SuspectQueueArguments() = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(adapter.SuspectQueueArguments(jobs, adapter.RabbitMQVersion{Major: 4})), "map[x-delivery-limit:-1 x-queue-type:quorum x-single-active-consumer:true]"; got != want {
		t.Errorf("on RabbitMQ 4 a quorum subscription's SuspectQueueArguments() = %s, want %s", got, want)
	}
	if args := adapter.SuspectQueueArguments(classic, v3); args != nil {
		t.Errorf("SuspectQueueArguments() = %v, want nil", args)
	}
	single := &runtime.Subscription{Name: "jobs", SingleActiveConsumer: true, Handlers: jobs.Handlers}
	if got, want := fmt.Sprint(adapter.SuspectQueueArguments(single, v3)), "map[x-single-active-consumer:true]"; got != want {
		t.Errorf("SuspectQueueArguments() = %s, want %s: one active consumer, as the subscription's queue", got, want)
	}
	named := &runtime.Subscription{Name: "jobs", QueueType: runtime.ClassicQueue, Handlers: jobs.Handlers}
	if got, want := fmt.Sprint(adapter.QueueArguments(named, v3)), "map[x-dead-letter-exchange: x-dead-letter-routing-key:jobs.dead x-queue-type:classic]"; got != want {
		t.Errorf("QueueArguments() with queue_type=classic = %s, want %s", got, want)
	}
}

// A quorum queue's delivery limit is always explicit: the one set, else
// the largest max_attempts, at least 2. A classic queue has
// none, and a quorum queue without a dead-letter queue still has one (the
// broker drops what passes it), but no dead-lettering.
func TestDeliveryLimitInForce(t *testing.T) {
	var v3 adapter.RabbitMQVersion // 3.x, or a version unknown
	quorum := func(limit int, attempts ...int) *runtime.Subscription {
		s := &runtime.Subscription{Name: "jobs", QueueType: runtime.QuorumQueue, DeliveryLimit: limit}
		for i, n := range attempts {
			s.Handlers = append(s.Handlers, retryingHandler(fmt.Sprint("T", i), runtime.Policy{MaxAttempts: n}))
		}
		return s
	}
	for _, c := range []struct {
		sub  *runtime.Subscription
		want int
	}{
		{quorum(0, 5), 5},
		{quorum(0, 3, 7), 7},
		{quorum(0, 1), 2},
		{quorum(0, 0), 2},
		{quorum(9, 3), 9},
		{quorum(1, 3), 1},
		{&runtime.Subscription{Name: "jobs", DeliveryLimit: 0, Handlers: []runtime.Handler{retryingHandler("T", runtime.Policy{MaxAttempts: 5})}}, 0},
	} {
		if got := c.sub.DeliveryLimitInForce(); got != c.want {
			t.Errorf("DeliveryLimitInForce() of %s with delivery_limit=%d and handlers %v = %d, want %d",
				c.sub.QueueType, c.sub.DeliveryLimit, c.sub.Handlers, got, c.want)
		}
		if c.want > 0 && adapter.QueueArguments(c.sub, v3)["x-delivery-limit"] != int64(c.want) {
			t.Errorf("x-delivery-limit = %#v, want int64(%d)", adapter.QueueArguments(c.sub, v3)["x-delivery-limit"], c.want)
		}
	}
	q := quorum(0, 3)
	if got, want := fmt.Sprint(adapter.QueueArguments(q, v3)), "map[x-delivery-limit:3 x-queue-type:quorum]"; got != want {
		t.Errorf("a quorum subscription with no dead_letter: QueueArguments() = %s, want %s", got, want)
	}
}

// Topology lists every queue once, consumed queues first, and gives each
// the arguments of its role for the broker's version: on RabbitMQ 4.0 and
// later a quorum dead-letter or suspect queue has no delivery limit (-1),
// which streamgen adds of its own accord.
func TestTopology(t *testing.T) {
	noop := func(context.Context, *struct{}, runtime.Metadata) runtime.Outcome { return runtime.Ack() }
	jobs := &runtime.Subscription{
		Name: "jobs", QueueType: runtime.QuorumQueue, RetryDelays: []time.Duration{time.Second, time.Minute},
		Handlers: []runtime.Handler{
			runtime.Handle("A", runtime.Policy{MaxAttempts: 3, DeadLetter: "jobs.dl"}, noop),
			runtime.Handle("B", runtime.Policy{DeadLetter: "parked"}, noop),
		},
	}
	parked := &runtime.Subscription{Name: "parked", Handlers: []runtime.Handler{runtime.Handle("A", runtime.Policy{}, noop)}}
	subs := []*runtime.Subscription{jobs, parked}
	describe := func(qs []adapter.Queue) []string {
		var out []string
		for _, q := range qs {
			out = append(out, fmt.Sprintf("%s %s of %s %v %v lacking %v", q.Name, q.Role, q.Subscription, q.TTL, q.Arguments, q.Defaulted))
		}
		return out
	}
	v3 := []string{
		"jobs queue of jobs 0s map[x-dead-letter-exchange: x-dead-letter-routing-key:jobs.dl x-dead-letter-strategy:at-least-once x-delivery-limit:3 x-overflow:reject-publish x-queue-type:quorum] lacking [x-dead-letter-exchange x-dead-letter-routing-key x-dead-letter-strategy x-overflow x-delivery-limit]",
		"parked queue of parked 0s map[] lacking []",
		"jobs.retry.1s wait queue of jobs 1s map[x-dead-letter-exchange: x-dead-letter-routing-key:jobs x-dead-letter-strategy:at-least-once x-message-ttl:1000 x-overflow:reject-publish x-queue-type:quorum] lacking []",
		"jobs.retry.1m wait queue of jobs 1m0s map[x-dead-letter-exchange: x-dead-letter-routing-key:jobs x-dead-letter-strategy:at-least-once x-message-ttl:60000 x-overflow:reject-publish x-queue-type:quorum] lacking []",
		"jobs.suspect suspect queue of jobs 0s map[x-queue-type:quorum] lacking []",
		"parked.suspect suspect queue of parked 0s map[] lacking []",
		"jobs.dl dead-letter queue of jobs 0s map[x-queue-type:quorum] lacking []",
	}
	v4 := slices.Clone(v3)
	v4[4] = "jobs.suspect suspect queue of jobs 0s map[x-delivery-limit:-1 x-queue-type:quorum] lacking [x-delivery-limit]"
	v4[6] = "jobs.dl dead-letter queue of jobs 0s map[x-delivery-limit:-1 x-queue-type:quorum] lacking [x-delivery-limit]"
	for _, c := range []struct {
		v    adapter.RabbitMQVersion
		want []string
	}{
		{adapter.RabbitMQVersion{}, v3},
		{adapter.RabbitMQVersion{Major: 3, Minor: 13}, v3},
		{adapter.RabbitMQVersion{Major: 4}, v4},
		{adapter.RabbitMQVersion{Major: 4, Minor: 3}, v4},
	} {
		got := describe(adapter.Topology(subs, c.v))
		if !slices.Equal(got, c.want) {
			t.Errorf("Topology on %d.%d:\n got %q\nwant %q", c.v.Major, c.v.Minor, got, c.want)
		}
	}
	if dl := adapter.Topology(subs, adapter.RabbitMQVersion{Major: 4})[6]; dl.Arguments["x-delivery-limit"] != int64(-1) {
		t.Errorf("x-delivery-limit = %#v, want int64(-1)", dl.Arguments["x-delivery-limit"])
	}
	// The dead-letter queue another subscription consumes is declared as
	// that one's queue.
	if q := adapter.Topology(subs, adapter.RabbitMQVersion{Major: 4})[1]; q.Name != "parked" || q.Role != adapter.ConsumedRole || q.Arguments != nil {
		t.Errorf("parked = %+v, want it declared as the queue parked consumes", q)
	}
}

// Every version's arguments are those of the latest ArgumentVersions entry
// it is at least: no rule changes at a version that list leaves out.
func TestArgumentVersions(t *testing.T) {
	versions := adapter.ArgumentVersions()
	if len(versions) == 0 || versions[0] != (adapter.RabbitMQVersion{}) {
		t.Fatalf("ArgumentVersions() = %v, want the zero version first", versions)
	}
	noop := func(context.Context, *struct{}, runtime.Metadata) runtime.Outcome { return runtime.Ack() }
	var subs []*runtime.Subscription
	for _, qt := range []runtime.QueueType{"", runtime.ClassicQueue, runtime.QuorumQueue} {
		subs = append(subs, &runtime.Subscription{Name: "jobs-" + string(qt), QueueType: qt, SingleActiveConsumer: true,
			Handlers: []runtime.Handler{runtime.Handle("A", runtime.Policy{MaxAttempts: 3, DeadLetter: "dl-" + string(qt)}, noop)}})
	}
	for major := range 7 {
		for minor := range 15 {
			v := adapter.RabbitMQVersion{Major: major, Minor: minor}
			base := versions[0]
			for _, w := range versions {
				if v.AtLeast(w.Major, w.Minor) {
					base = w
				}
			}
			if got, want := fmt.Sprint(adapter.Topology(subs, v)), fmt.Sprint(adapter.Topology(subs, base)); got != want {
				t.Errorf("Topology on %d.%d differs from that on %d.%d, which ArgumentVersions names:\n%s\n%s", major, minor, base.Major, base.Minor, got, want)
			}
		}
	}
	for i, v := range versions[1:] {
		if fmt.Sprint(adapter.Topology(subs, v)) == fmt.Sprint(adapter.Topology(subs, versions[i])) {
			t.Errorf("ArgumentVersions names %d.%d, where no argument changes", v.Major, v.Minor)
		}
	}
}
