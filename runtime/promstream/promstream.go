package promstream

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/observe"
)

// The metrics, by name. Every one is labelled by broker ("rabbitmq",
// "zeromq"); see the package documentation for the other labels.
const (
	// MetricDeliveries counts the deliveries received, poison included, by
	// broker and subscription.
	MetricDeliveries = "streamgen_deliveries_total"
	// MetricSettled counts the deliveries settled, by broker, subscription,
	// message_type and outcome.
	MetricSettled = "streamgen_settled_total"
	// MetricPoison counts the settled deliveries that never reached a
	// handler, by broker, subscription and message_type.
	MetricPoison = "streamgen_poison_total"
	// MetricHandlerDuration is a histogram of handler calls, middleware
	// included, in seconds, by broker, subscription, message_type and
	// outcome.
	MetricHandlerDuration = "streamgen_handler_duration_seconds"
	// MetricInFlight gauges the deliveries being processed, by broker and
	// subscription.
	MetricInFlight = "streamgen_deliveries_in_flight"
	// MetricReconnects counts the reconnects the brokers report, by
	// broker.
	MetricReconnects = "streamgen_reconnects_total"
	// MetricConfirmDuration is a histogram, in seconds, of the time a
	// publish waited for the broker's confirm (RabbitMQ: Publish, retry
	// copies, dead letters), by broker and outcome ("confirmed" or
	// "failed").
	MetricConfirmDuration = "streamgen_publish_confirm_duration_seconds"
	// MetricCopiesWaiting gauges the ZeroMQ retry copies waiting for their
	// delay in memory, by broker and subscription.
	MetricCopiesWaiting = "streamgen_copies_waiting"
)

// The outcome label of MetricSettled and MetricHandlerDuration: what
// became of a delivery, in the words of runtime.SubscriptionStats.
const (
	OutcomeAcked    = "acked"
	OutcomeRetried  = "retried"
	OutcomeParked   = "parked"
	OutcomeRejected = "rejected"
	OutcomeDropped  = "dropped"
	// OutcomeFailed is a verdict the broker adapter could not carry out:
	// the broker then redelivers, or the message was nacked.
	OutcomeFailed = "failed"
)

// outcomes are the outcome label's values.
var outcomes = [...]string{OutcomeAcked, OutcomeRetried, OutcomeParked, OutcomeRejected, OutcomeDropped, OutcomeFailed}

// OtherMessageType is the message_type label of a delivery whose type no
// handler of its subscription takes (poison): the type a sender wrote is
// not trusted as a label value, so that a stream of made-up types cannot
// make new series. A delivery that carries no type has the label "".
const OtherMessageType = "_OTHER"

// Option configures a Collector.
type Option func(*config)

type config struct {
	handlerBuckets, confirmBuckets []float64
}

// WithHandlerBuckets sets the upper bounds, in seconds and in increasing
// order, of MetricHandlerDuration's buckets; the default is
// prometheus.DefBuckets (5 ms to 10 s).
func WithHandlerBuckets(bounds ...float64) Option {
	return func(c *config) { c.handlerBuckets = bounds }
}

// WithConfirmBuckets sets the upper bounds, in seconds and in increasing
// order, of MetricConfirmDuration's buckets; the default is
// prometheus.DefBuckets.
func WithConfirmBuckets(bounds ...float64) Option {
	return func(c *config) { c.confirmBuckets = bounds }
}

// Collector measures a streamgen App for Prometheus. It is a
// observe.Observer, which the App is given with runtime.WithObserver, and a
// prometheus.Collector, which is registered with the registry that is
// scraped. Make one with New; it is safe for concurrent use.
type Collector struct {
	deliveries      *prometheus.CounterVec
	settled         *prometheus.CounterVec
	poison          *prometheus.CounterVec
	handlerDuration *prometheus.HistogramVec
	inFlight        *prometheus.GaugeVec
	reconnects      *prometheus.CounterVec
	confirmDuration *prometheus.HistogramVec
	waiting         *prometheus.Desc
	// known describes the tasks' gauges whose names are known in
	// advance (observe.GaugeOutboxBacklog, ...), by name.
	known map[string]*prometheus.Desc

	subs sync.Map // subscriptionKey → *subscription

	mu        sync.Mutex
	consumers map[*observe.ConsumerInfo]struct{} // ZeroMQ consumers, for MetricCopiesWaiting
	tasks     map[*taskGauges]struct{}           // the App's tasks that report gauges
}

// taskGauges are the gauges of one of the App's tasks (WatchGauges).
type taskGauges struct {
	task string
	read func() []observe.Gauge
}

var (
	_ observe.Observer      = (*Collector)(nil)
	_ observe.GaugeObserver = (*Collector)(nil)
	_ prometheus.Collector  = (*Collector)(nil)
)

// New returns a Collector. It panics when the bounds given to
// WithHandlerBuckets or WithConfirmBuckets are none or not in increasing
// order, as prometheus's own constructors panic on bad buckets, rather
// than on the first delivery.
func New(opts ...Option) *Collector {
	cfg := config{handlerBuckets: prometheus.DefBuckets, confirmBuckets: prometheus.DefBuckets}
	for _, o := range opts {
		o(&cfg)
	}
	mustIncrease("WithHandlerBuckets", cfg.handlerBuckets)
	mustIncrease("WithConfirmBuckets", cfg.confirmBuckets)
	sub := []string{"broker", "subscription"}
	settled := []string{"broker", "subscription", "message_type", "outcome"}
	return &Collector{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDeliveries,
			Help: "Deliveries received, poison included."}, sub),
		settled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricSettled,
			Help: "Deliveries settled, by outcome."}, settled),
		poison: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPoison,
			Help: "Settled deliveries that never reached a handler."}, []string{"broker", "subscription", "message_type"}),
		handlerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricHandlerDuration,
			Help: "Duration of handler calls, middleware included.", Buckets: cfg.handlerBuckets}, settled),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricInFlight,
			Help: "Deliveries being processed."}, sub),
		reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricReconnects,
			Help: "Reconnects after a lost broker connection."}, []string{"broker"}),
		confirmDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricConfirmDuration,
			Help: "Time a publish waited for the broker's confirm.", Buckets: cfg.confirmBuckets}, []string{"broker", "outcome"}),
		waiting: prometheus.NewDesc(MetricCopiesWaiting,
			"ZeroMQ retry copies waiting for their delay in memory.", sub, nil),
		known: map[string]*prometheus.Desc{
			observe.GaugeOutboxBacklog: prometheus.NewDesc(observe.GaugeOutboxBacklog,
				"Messages an outbox holds: committed, not yet confirmed by the broker.", []string{"task"}, nil),
			observe.GaugeOutboxOldestAge: prometheus.NewDesc(observe.GaugeOutboxOldestAge,
				"How long the oldest message an outbox holds has waited, in seconds.", []string{"task"}, nil),
		},
		consumers: map[*observe.ConsumerInfo]struct{}{},
		tasks:     map[*taskGauges]struct{}{},
	}
}

func mustIncrease(option string, bounds []float64) {
	if len(bounds) == 0 {
		panic("promstream: " + option + " needs at least one bucket bound")
	}
	for i := 1; i < len(bounds); i++ {
		if bounds[i] <= bounds[i-1] {
			panic(fmt.Sprintf("promstream: %s bounds must increase: %v", option, bounds))
		}
	}
}

type subscriptionKey struct {
	kind runtime.BrokerKind
	name string
}

// subscription is what the Collector keeps of one subscription: its series
// that every delivery touches, and the message types its handlers take.
type subscription struct {
	broker, name string
	deliveries   prometheus.Counter
	inFlight     prometheus.Gauge
	types        atomic.Pointer[map[string]struct{}]
}

// subscription returns the state of a subscription, made once.
func (c *Collector) subscription(kind runtime.BrokerKind, name string) *subscription {
	k := subscriptionKey{kind, name}
	if s, ok := c.subs.Load(k); ok {
		return s.(*subscription)
	}
	s := &subscription{
		broker: string(kind), name: name,
		deliveries: c.deliveries.WithLabelValues(string(kind), name),
		inFlight:   c.inFlight.WithLabelValues(string(kind), name),
	}
	s.types.Store(&map[string]struct{}{})
	actual, _ := c.subs.LoadOrStore(k, s)
	return actual.(*subscription)
}

// messageType returns the message_type label of a settlement's type: the
// type when a handler of the subscription takes it, else
// OtherMessageType.
func (s *subscription) messageType(t string) string {
	if t == "" {
		return ""
	}
	if _, ok := (*s.types.Load())[t]; ok {
		return t
	}
	return OtherMessageType
}

// StartConsumer learns the message types of the consumer's subscription,
// starts its series at zero, so that a rate over them is defined from the
// start, and keeps a ZeroMQ consumer for MetricCopiesWaiting until it
// stops.
func (c *Collector) StartConsumer(info observe.ConsumerInfo) func() {
	s := c.subscription(runtime.BrokerKind(info.Broker), info.Subscription)
	c.mu.Lock()
	types := *s.types.Load()
	merged := make(map[string]struct{}, len(types)+len(info.MessageTypes))
	for t := range types {
		merged[t] = struct{}{}
	}
	for _, t := range info.MessageTypes {
		merged[t] = struct{}{}
	}
	s.types.Store(&merged)
	if runtime.BrokerKind(info.Broker) == runtime.ZeroMQ && info.WaitingCopies != nil {
		c.consumers[&info] = struct{}{}
	}
	c.mu.Unlock()
	for _, t := range info.MessageTypes {
		for _, o := range outcomes {
			c.settled.WithLabelValues(s.broker, s.name, t, o)
		}
	}
	c.reconnects.WithLabelValues(s.broker)
	return func() {
		c.mu.Lock()
		delete(c.consumers, &info)
		c.mu.Unlock()
	}
}

// StartDelivery counts the delivery and adds it to those in flight.
func (c *Collector) StartDelivery(_ context.Context, d observe.DeliveryStart) (context.Context, observe.DeliveryObservation) {
	s := c.subscription(runtime.BrokerKind(d.Broker), d.Subscription)
	s.deliveries.Inc()
	s.inFlight.Inc()
	return nil, &delivery{c: c, s: s}
}

// delivery is one delivery in flight.
type delivery struct {
	c *Collector
	s *subscription
}

// CopyHeaders adds nothing to a copy.
func (d *delivery) CopyHeaders(func(name, value string)) {}

// End counts how the delivery was settled, records how long its handler
// took, and takes it from those in flight.
func (d *delivery) End(st observe.Settlement) {
	typ := d.s.messageType(st.MessageType)
	out := outcome(st)
	d.c.settled.WithLabelValues(d.s.broker, d.s.name, typ, out).Inc()
	if st.Poison {
		d.c.poison.WithLabelValues(d.s.broker, d.s.name, typ).Inc()
	}
	if st.Handled {
		d.c.handlerDuration.WithLabelValues(d.s.broker, d.s.name, typ, out).Observe(st.HandlerDuration.Seconds())
	}
	d.s.inFlight.Dec()
}

// outcome is the outcome label of a settlement.
func outcome(s observe.Settlement) string {
	if s.Err != nil {
		return OutcomeFailed
	}
	switch s.Verdict {
	case "ack":
		return OutcomeAcked
	case "retry":
		return OutcomeRetried
	case "park":
		return OutcomeParked
	case "reject":
		return OutcomeRejected
	case "drop":
		return OutcomeDropped
	}
	return s.Verdict
}

// BrokerEvent counts reconnects and records confirm latency.
func (c *Collector) BrokerEvent(e observe.Event) {
	switch e.Kind {
	case observe.Reconnected:
		c.reconnects.WithLabelValues(string(e.Broker)).Inc()
	case observe.Confirmed:
		out := "confirmed"
		if e.Err != nil {
			out = "failed"
		}
		c.confirmDuration.WithLabelValues(string(e.Broker), out).Observe(e.Duration.Seconds())
	}
}

// WatchGauges exports the gauges of one of the App's tasks, each labelled
// by task, until the task ends.
func (c *Collector) WatchGauges(task string, read func() []observe.Gauge) func() {
	g := &taskGauges{task: task, read: read}
	c.mu.Lock()
	c.tasks[g] = struct{}{}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.tasks, g)
		c.mu.Unlock()
	}
}

// Describe sends the descriptions of every metric. A task's gauge whose
// name is not one of observe's (observe.GaugeOutboxBacklog, ...) is known
// only once the task runs: it is collected undescribed, which a registry
// accepts unless it is pedantic.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.deliveries.Describe(ch)
	c.settled.Describe(ch)
	c.poison.Describe(ch)
	c.handlerDuration.Describe(ch)
	c.inFlight.Describe(ch)
	c.reconnects.Describe(ch)
	c.confirmDuration.Describe(ch)
	ch <- c.waiting
	for _, d := range c.known {
		ch <- d
	}
}

// Collect sends the current value of every series.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.deliveries.Collect(ch)
	c.settled.Collect(ch)
	c.poison.Collect(ch)
	c.handlerDuration.Collect(ch)
	c.inFlight.Collect(ch)
	c.reconnects.Collect(ch)
	c.confirmDuration.Collect(ch)

	c.mu.Lock()
	cs := make([]*observe.ConsumerInfo, 0, len(c.consumers))
	for info := range c.consumers {
		cs = append(cs, info)
	}
	c.mu.Unlock()
	waiting := map[subscriptionKey]int{}
	for _, info := range cs {
		waiting[subscriptionKey{runtime.BrokerKind(info.Broker), info.Subscription}] += info.WaitingCopies()
	}
	for k, n := range waiting {
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(n), string(k.kind), k.name)
	}
	c.collectTasks(ch)
}

// collectTasks sends the gauges of the App's tasks.
func (c *Collector) collectTasks(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	tasks := make([]*taskGauges, 0, len(c.tasks))
	for g := range c.tasks {
		tasks = append(tasks, g)
	}
	c.mu.Unlock()
	for _, t := range tasks {
		for _, g := range t.read() {
			desc, ok := c.known[g.Name]
			if !ok {
				desc = prometheus.NewDesc(g.Name, g.Help, []string{"task"}, nil)
			}
			m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, g.Value, t.task)
			if err != nil {
				m = prometheus.NewInvalidMetric(desc, err)
			}
			ch <- m
		}
	}
}
