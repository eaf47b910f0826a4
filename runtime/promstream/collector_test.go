package promstream_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/observe"
	"github.com/streamgen/streamgen/runtime/promstream"
)

// A verdict the adapter could not carry out counts as failed, whatever it
// was; a confirm that failed is timed apart from those that succeeded.
func TestFailuresAreCountedApart(t *testing.T) {
	c, reg := newRegistered(t)
	stopped := c.StartConsumer(observe.ConsumerInfo{Broker: string(runtime.RabbitMQ), Subscription: "jobs", MessageTypes: []string{"Job"}})
	defer stopped()
	for _, s := range []observe.Settlement{
		{Verdict: "ack", MessageType: "Job", Handled: true, HandlerDuration: time.Millisecond},
		{Verdict: "ack", MessageType: "Job", Handled: true, Err: errors.New("the channel closed")},
		{Verdict: "retry", MessageType: "Job", Handled: true, Err: errors.New("the confirm never came")},
	} {
		_, d := c.StartDelivery(context.Background(), observe.DeliveryStart{Broker: string(runtime.RabbitMQ), Subscription: "jobs", MessageType: "Job"})
		d.End(s)
	}
	c.BrokerEvent(observe.Event{Kind: observe.Confirmed, Broker: string(runtime.RabbitMQ), Duration: time.Millisecond})
	c.BrokerEvent(observe.Event{Kind: observe.Confirmed, Broker: string(runtime.RabbitMQ), Duration: 5 * time.Second, Err: errors.New("no confirm")})
	c.BrokerEvent(observe.Event{Kind: observe.Reconnected, Broker: string(runtime.RabbitMQ)})

	compare(t, reg, `
streamgen_settled_total{broker="rabbitmq",subscription="jobs",message_type="Job",outcome="acked"} 1
streamgen_settled_total{broker="rabbitmq",subscription="jobs",message_type="Job",outcome="retried"} 0
streamgen_settled_total{broker="rabbitmq",subscription="jobs",message_type="Job",outcome="parked"} 0
streamgen_settled_total{broker="rabbitmq",subscription="jobs",message_type="Job",outcome="rejected"} 0
streamgen_settled_total{broker="rabbitmq",subscription="jobs",message_type="Job",outcome="dropped"} 0
streamgen_settled_total{broker="rabbitmq",subscription="jobs",message_type="Job",outcome="failed"} 2
streamgen_reconnects_total{broker="rabbitmq"} 1
streamgen_deliveries_in_flight{broker="rabbitmq",subscription="jobs"} 0
`, promstream.MetricSettled, promstream.MetricReconnects, promstream.MetricInFlight)
	for outcome, n := range map[string]float64{"confirmed": 1, "failed": 1} {
		if got := value(t, reg, promstream.MetricConfirmDuration, map[string]string{"broker": "rabbitmq", "outcome": outcome}); got != n {
			t.Errorf("%s: %v confirms timed, want %v", outcome, got, n)
		}
	}
	if got := value(t, reg, promstream.MetricHandlerDuration, map[string]string{"broker": "rabbitmq", "subscription": "jobs", "message_type": "Job", "outcome": "failed"}); got != 2 {
		t.Errorf("%v failed handler calls timed, want 2", got)
	}
}

// The metrics follow Prometheus's naming conventions, as its linter
// checks them, and a Collector describes what it collects, so that a
// pedantic registry accepts it.
func TestMetricsPassTheLinter(t *testing.T) {
	c := promstream.New()
	stopped := c.StartConsumer(observe.ConsumerInfo{Broker: string(runtime.ZeroMQ), Subscription: "jobs", MessageTypes: []string{"Job"}, WaitingCopies: func() int { return 2 }})
	defer stopped()
	_, d := c.StartDelivery(context.Background(), observe.DeliveryStart{Broker: string(runtime.ZeroMQ), Subscription: "jobs"})
	d.End(observe.Settlement{Verdict: "ack", MessageType: "Job", Handled: true})
	c.BrokerEvent(observe.Event{Kind: observe.Confirmed, Broker: string(runtime.RabbitMQ), Duration: time.Millisecond})

	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err != nil {
		t.Errorf("the pedantic registry refused the metrics: %v", err)
	}
	if n := value(t, reg, promstream.MetricCopiesWaiting, map[string]string{"broker": "zeromq", "subscription": "jobs"}); n != 2 {
		t.Errorf("%v copies waiting, want 2", n)
	}
	// Once its consumer stopped, a subscription's copies are not gauged.
	stopped()
	if n := testutil.CollectAndCount(c, promstream.MetricCopiesWaiting); n != 0 {
		t.Errorf("%d copies waiting series after the consumer stopped, want 0", n)
	}
}

// Two Collectors cannot be registered with one registry, and bucket
// bounds out of order are refused when the Collector is made, not on the
// first delivery.
func TestMisuseFailsEarly(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(promstream.New())
	if err := reg.Register(promstream.New()); err == nil {
		t.Error("a second Collector registered with the same registry")
	}
	for name, opt := range map[string]promstream.Option{
		"WithHandlerBuckets": promstream.WithHandlerBuckets(1, 0.5),
		"WithConfirmBuckets": promstream.WithConfirmBuckets(),
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), "promstream: "+name) {
					t.Errorf("%s: New recovered %v, want a panic naming the option", name, r)
				}
			}()
			promstream.New(opt)
		}()
	}
}

// The gauges of an App's task are exported, labelled by task, while the
// task runs; the outbox's are described, so a pedantic registry takes
// them, and the linter finds nothing wrong with them.
func TestTaskGaugesAreExportedWhileTheTaskRuns(t *testing.T) {
	c := promstream.New()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	stopped := c.WatchGauges("outbox relay", func() []observe.Gauge {
		return []observe.Gauge{
			{Name: observe.GaugeOutboxBacklog, Help: "Messages an outbox holds.", Value: 12},
			{Name: observe.GaugeOutboxOldestAge, Help: "Age of the oldest.", Value: 3.5},
		}
	})
	compare(t, reg, `
streamgen_outbox_backlog{task="outbox relay"} 12
streamgen_outbox_oldest_age_seconds{task="outbox relay"} 3.5
`, observe.GaugeOutboxBacklog, observe.GaugeOutboxOldestAge)
	problems, err := testutil.CollectAndLint(c, observe.GaugeOutboxBacklog, observe.GaugeOutboxOldestAge)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	stopped()
	if n := testutil.CollectAndCount(c, observe.GaugeOutboxBacklog); n != 0 {
		t.Errorf("%d backlog series after the task ended, want 0", n)
	}

	// A gauge of another name is collected too, on a registry that is not pedantic.
	plain := prometheus.NewRegistry()
	c2 := promstream.New()
	plain.MustRegister(c2)
	defer c2.WatchGauges("cache", func() []observe.Gauge {
		return []observe.Gauge{{Name: "streamgen_cache_entries", Help: "Entries in the cache.", Value: 7}}
	})()
	compare(t, plain, `
streamgen_cache_entries{task="cache"} 7
`, "streamgen_cache_entries")
}
