package otelstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/observe"
)

// ScopeName is the instrumentation scope of the spans and metrics.
const ScopeName = "github.com/streamgen/streamgen/runtime/otelstream"

// The attributes streamgen adds to the semantic conventions' own.
const (
	// AttemptKey is the 1-based delivery number of the message.
	AttemptKey = attribute.Key("streamgen.attempt")
	// MaxAttemptsKey is the cap on deliveries in force.
	MaxAttemptsKey = attribute.Key("streamgen.max_attempts")
	// RetryCountKey is the retry count the message carried.
	RetryCountKey = attribute.Key("streamgen.retry_count")
	// MessageTypeKey is the message type name on the wire.
	MessageTypeKey = attribute.Key("streamgen.message_type")
	// VerdictKey is what became of the delivery: ack, retry, park, reject
	// or drop.
	VerdictKey = attribute.Key("streamgen.verdict")
	// PoisonKey is set on a message that never reached a handler.
	PoisonKey = attribute.Key("streamgen.poison")
)

// The metrics, by name.
const (
	// MetricHandlerDuration is a histogram of handler calls, middleware
	// included, in seconds, by messaging.system,
	// messaging.destination.name and streamgen.verdict.
	MetricHandlerDuration = "streamgen.handler.duration"
	// MetricInFlight counts the deliveries being processed, by
	// messaging.system and messaging.destination.name.
	MetricInFlight = "streamgen.deliveries.in_flight"
	// MetricReconnects counts the reconnects brokers report, by
	// messaging.system.
	MetricReconnects = "streamgen.reconnects"
	// MetricConfirmDuration is a histogram, in seconds, of the time a
	// publish waited for the broker's confirm (RabbitMQ: Publish, retry
	// copies, dead letters), by messaging.system, with error.type set when
	// the publish failed.
	MetricConfirmDuration = "streamgen.publish.confirm.duration"
	// MetricCopiesWaiting gauges the ZeroMQ retry copies waiting for their
	// delay in memory, by messaging.system and messaging.destination.name.
	MetricCopiesWaiting = "streamgen.copies.waiting"
	// MetricOutboxBacklog gauges the messages an outbox holds (committed,
	// not yet confirmed by the broker), by streamgen.task: the gauge
	// observe.GaugeOutboxBacklog of the relay runtime/outbox runs.
	MetricOutboxBacklog = "streamgen.outbox.backlog"
	// MetricOutboxOldestAge gauges, in seconds, how long the oldest of
	// them has waited, by streamgen.task (observe.GaugeOutboxOldestAge).
	MetricOutboxOldestAge = "streamgen.outbox.oldest_age"
)

// TaskKey names the App's task (runtime.Task) a gauge is of.
const TaskKey = attribute.Key("streamgen.task")

// Option configures an Observer.
type Option func(*config)

type config struct {
	tp    trace.TracerProvider
	mp    metric.MeterProvider
	props propagation.TextMapPropagator
}

// WithTracerProvider sets where spans go; the default is the global
// otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithMeterProvider sets where metrics go; the default is the global
// otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithPropagator sets how a span's context travels in message headers;
// the default is W3C trace context and baggage (traceparent, tracestate,
// baggage), whatever the global propagator is.
func WithPropagator(p propagation.TextMapPropagator) Option { return func(c *config) { c.props = p } }

// Observer is a observe.Observer that traces and measures with
// OpenTelemetry. Give it to the App with runtime.WithObserver, and send
// with the Publisher it wraps. Make one with New.
type Observer struct {
	tracer trace.Tracer
	props  propagation.TextMapPropagator

	handlerDuration metric.Float64Histogram
	inFlight        metric.Int64UpDownCounter
	reconnects      metric.Int64Counter
	confirmDuration metric.Float64Histogram
	waiting         metric.Int64ObservableGauge
	// taskGauges are the instruments of the tasks' gauges this package
	// knows, by the gauge's name (observe.GaugeOutboxBacklog, ...).
	taskGauges map[string]metric.Float64ObservableGauge

	attrs sync.Map // subscriptionKey → attribute.Set

	mu        sync.Mutex
	consumers map[*observe.ConsumerInfo]struct{} // ZeroMQ consumers, for MetricCopiesWaiting
	tasks     map[*taskGauges]struct{}           // the App's tasks that report gauges
}

// taskGauges are the gauges of one of the App's tasks (WatchGauges).
type taskGauges struct {
	attrs attribute.Set
	read  func() []observe.Gauge
}

var (
	_ observe.Observer      = (*Observer)(nil)
	_ observe.GaugeObserver = (*Observer)(nil)
)

// New returns an Observer. Its error says which instrument the meter
// provider refused.
func New(opts ...Option) (*Observer, error) {
	c := config{}
	for _, o := range opts {
		o(&c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	if c.props == nil {
		c.props = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	o := &Observer{
		tracer:     c.tp.Tracer(ScopeName),
		props:      c.props,
		consumers:  map[*observe.ConsumerInfo]struct{}{},
		tasks:      map[*taskGauges]struct{}{},
		taskGauges: map[string]metric.Float64ObservableGauge{},
	}
	meter := c.mp.Meter(ScopeName)
	var errs []error
	var err error
	o.handlerDuration, err = meter.Float64Histogram(MetricHandlerDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of handler calls, middleware included."))
	errs = append(errs, err)
	o.inFlight, err = meter.Int64UpDownCounter(MetricInFlight, metric.WithUnit("{delivery}"),
		metric.WithDescription("Deliveries being processed."))
	errs = append(errs, err)
	o.reconnects, err = meter.Int64Counter(MetricReconnects, metric.WithUnit("{reconnect}"),
		metric.WithDescription("Reconnects after a lost broker connection."))
	errs = append(errs, err)
	o.confirmDuration, err = meter.Float64Histogram(MetricConfirmDuration, metric.WithUnit("s"),
		metric.WithDescription("Time a publish waited for the broker's confirm."))
	errs = append(errs, err)
	o.waiting, err = meter.Int64ObservableGauge(MetricCopiesWaiting, metric.WithUnit("{copy}"),
		metric.WithDescription("ZeroMQ retry copies waiting for their delay in memory."))
	errs = append(errs, err)
	for _, g := range []struct{ gauge, name, unit, desc string }{
		{observe.GaugeOutboxBacklog, MetricOutboxBacklog, "{message}", "Messages an outbox holds: committed, not yet confirmed by the broker."},
		{observe.GaugeOutboxOldestAge, MetricOutboxOldestAge, "s", "How long the oldest message an outbox holds has waited."},
	} {
		o.taskGauges[g.gauge], err = meter.Float64ObservableGauge(g.name, metric.WithUnit(g.unit), metric.WithDescription(g.desc))
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("otelstream: %w", err)
	}
	if _, err := meter.RegisterCallback(o.observeWaiting, o.waiting); err != nil {
		return nil, fmt.Errorf("otelstream: %w", err)
	}
	tasks := make([]metric.Observable, 0, len(o.taskGauges))
	for _, g := range o.taskGauges {
		tasks = append(tasks, g)
	}
	if _, err := meter.RegisterCallback(o.observeTasks, tasks...); err != nil {
		return nil, fmt.Errorf("otelstream: %w", err)
	}
	return o, nil
}

// WatchGauges observes the gauges of one of the App's tasks whose names
// this package knows (MetricOutboxBacklog, MetricOutboxOldestAge), with
// the attribute streamgen.task, until the task ends; it ignores others.
func (o *Observer) WatchGauges(task string, read func() []observe.Gauge) func() {
	g := &taskGauges{attrs: attribute.NewSet(TaskKey.String(task)), read: read}
	o.mu.Lock()
	o.tasks[g] = struct{}{}
	o.mu.Unlock()
	return func() {
		o.mu.Lock()
		delete(o.tasks, g)
		o.mu.Unlock()
	}
}

func (o *Observer) observeTasks(_ context.Context, obs metric.Observer) error {
	o.mu.Lock()
	tasks := make([]*taskGauges, 0, len(o.tasks))
	for g := range o.tasks {
		tasks = append(tasks, g)
	}
	o.mu.Unlock()
	for _, t := range tasks {
		for _, g := range t.read() {
			if inst, ok := o.taskGauges[g.Name]; ok {
				obs.ObserveFloat64(inst, g.Value, metric.WithAttributeSet(t.attrs))
			}
		}
	}
	return nil
}

// system is the messaging.system attribute of a broker kind.
func system(kind runtime.BrokerKind) attribute.KeyValue {
	if kind == runtime.RabbitMQ {
		return semconv.MessagingSystemRabbitMQ
	}
	return semconv.MessagingSystemKey.String(string(kind))
}

type subscriptionKey struct {
	kind runtime.BrokerKind
	name string
}

// subscriptionAttrs returns the attributes that name a subscription, made
// once per subscription.
func (o *Observer) subscriptionAttrs(kind runtime.BrokerKind, name string) attribute.Set {
	k := subscriptionKey{kind, name}
	if s, ok := o.attrs.Load(k); ok {
		return s.(attribute.Set)
	}
	s := attribute.NewSet(system(kind), semconv.MessagingDestinationName(name))
	o.attrs.Store(k, s)
	return s
}

// StartDelivery starts the delivery's consumer span ("process <queue>").
// Its parent is the span whose context the message carries: the publish
// for a first delivery, the previous attempt for a retry copy or a dead
// letter. A message without one starts a new trace.
func (o *Observer) StartDelivery(ctx context.Context, d observe.DeliveryStart) (context.Context, observe.DeliveryObservation) {
	sub := o.subscriptionAttrs(runtime.BrokerKind(d.Broker), d.Subscription)
	parent := o.props.Extract(ctx, carrier(d.Headers))
	attrs := []attribute.KeyValue{
		system(runtime.BrokerKind(d.Broker)),
		semconv.MessagingDestinationName(d.Subscription),
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingOperationName("process"),
		AttemptKey.Int(d.Attempt),
		RetryCountKey.Int(d.RetryCount),
	}
	if d.MessageID != "" {
		attrs = append(attrs, semconv.MessagingMessageID(d.MessageID))
	}
	if d.MessageType != "" {
		attrs = append(attrs, MessageTypeKey.String(d.MessageType))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
	if !trace.SpanContextFromContext(parent).IsValid() {
		opts = append(opts, trace.WithNewRoot())
	}
	sctx, span := o.tracer.Start(parent, "process "+d.Subscription, opts...)
	o.inFlight.Add(ctx, 1, metric.WithAttributeSet(sub))
	return sctx, &delivery{o: o, ctx: sctx, span: span, sub: sub}
}

// StartBatch starts the span of a batch handler call ("process batch
// <queue>"), linked to the span of each delivery of the batch, and
// returns the context the call runs in and the function that ends the
// span. Each delivery keeps its own span, its verdict, and the context its
// copies carry.
func (o *Observer) StartBatch(ctx context.Context, b observe.BatchStart) (context.Context, func()) {
	links := make([]trace.Link, 0, len(b.Deliveries))
	for _, dctx := range b.Deliveries {
		if sc := trace.SpanContextFromContext(dctx); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	attrs := []attribute.KeyValue{
		system(runtime.BrokerKind(b.Broker)),
		semconv.MessagingDestinationName(b.Subscription),
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingOperationName("process"),
		semconv.MessagingBatchMessageCount(len(b.Deliveries)),
	}
	if b.MessageType != "" {
		attrs = append(attrs, MessageTypeKey.String(b.MessageType))
	}
	bctx, span := o.tracer.Start(ctx, "process batch "+b.Subscription, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithNewRoot(), trace.WithLinks(links...), trace.WithAttributes(attrs...))
	return bctx, func() { span.End() }
}

// delivery is one delivery's span and metrics.
type delivery struct {
	o    *Observer
	ctx  context.Context
	span trace.Span
	sub  attribute.Set
}

// CopyHeaders puts the span's context on the copy, so that the next
// delivery's span is its child.
func (d *delivery) CopyHeaders(set func(name, value string)) {
	d.o.props.Inject(d.ctx, setter(set))
}

// End ends the span with the verdict, and records the metrics.
func (d *delivery) End(s observe.Settlement) {
	d.span.SetAttributes(VerdictKey.String(s.Verdict), MaxAttemptsKey.Int(s.MaxAttempts), AttemptKey.Int(s.Attempt))
	if s.MessageType != "" {
		d.span.SetAttributes(MessageTypeKey.String(s.MessageType))
	}
	if s.Poison {
		d.span.SetAttributes(PoisonKey.Bool(true))
	}
	switch {
	case s.Err != nil:
		d.span.RecordError(s.Err)
		d.span.SetStatus(codes.Error, "could not "+s.Verdict+" the message: "+s.Err.Error())
	case s.Verdict != "ack":
		d.span.SetStatus(codes.Error, s.Verdict+": "+s.Reason)
	}
	ctx := context.Background()
	if s.Handled {
		set := attribute.NewSet(append(d.sub.ToSlice(), VerdictKey.String(s.Verdict))...)
		d.o.handlerDuration.Record(ctx, s.HandlerDuration.Seconds(), metric.WithAttributeSet(set))
	}
	d.o.inFlight.Add(ctx, -1, metric.WithAttributeSet(d.sub))
	d.span.End()
}

// StartConsumer keeps a ZeroMQ consumer for MetricCopiesWaiting until it
// stops.
func (o *Observer) StartConsumer(c observe.ConsumerInfo) func() {
	if runtime.BrokerKind(c.Broker) != runtime.ZeroMQ || c.WaitingCopies == nil {
		return func() {}
	}
	o.mu.Lock()
	o.consumers[&c] = struct{}{}
	o.mu.Unlock()
	return func() {
		o.mu.Lock()
		delete(o.consumers, &c)
		o.mu.Unlock()
	}
}

func (o *Observer) observeWaiting(_ context.Context, obs metric.Observer) error {
	o.mu.Lock()
	cs := make([]*observe.ConsumerInfo, 0, len(o.consumers))
	for c := range o.consumers {
		cs = append(cs, c)
	}
	o.mu.Unlock()
	for _, c := range cs {
		obs.ObserveInt64(o.waiting, int64(c.WaitingCopies()), metric.WithAttributeSet(o.subscriptionAttrs(runtime.BrokerKind(c.Broker), c.Subscription)))
	}
	return nil
}

// BrokerEvent counts reconnects and records confirm latency.
func (o *Observer) BrokerEvent(e observe.Event) {
	ctx := context.Background()
	switch e.Kind {
	case observe.Reconnected:
		o.reconnects.Add(ctx, 1, metric.WithAttributes(system(runtime.BrokerKind(e.Broker))))
	case observe.Confirmed:
		attrs := []attribute.KeyValue{system(runtime.BrokerKind(e.Broker))}
		if e.Err != nil {
			attrs = append(attrs, semconv.ErrorTypeOther)
		}
		o.confirmDuration.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(attrs...))
	}
}

// Publisher returns p, tracing each publish: a producer span, a child of
// the span in the publish's context, whose context the message carries in
// its headers, so that its deliveries' spans are its children. Typed
// publishers and runtime.Publish take it in place of p; it encodes with
// p's codec.
//
// The span follows the messaging semantic conventions. On RabbitMQ the
// destination is an exchange and a routing key: messaging.destination.name
// is the exchange, "" for the default exchange a publish to a queue goes
// through, and messaging.rabbitmq.destination.routing_key the routing key
// (the queue's name, through the default exchange); the span is "send
// <exchange>", or "send <queue>" through the default exchange. Elsewhere
// (ZeroMQ) messaging.destination.name is the queue, and the span "send
// <queue>".
func (o *Observer) Publisher(p runtime.Publisher) runtime.Publisher {
	return &publisher{o: o, p: p}
}

// codecProvider is a Publisher with a codec of its own, which
// runtime.Publish encodes with (see runtime.Broker).
type codecProvider interface{ Codec() runtime.Codec }

type publisher struct {
	o *Observer
	p runtime.Publisher
}

var (
	_ runtime.Publisher = (*publisher)(nil)
	_ codecProvider     = (*publisher)(nil)
)

// Codec returns the codec of the Publisher it wraps, nil when it has none
// (runtime.Publish then encodes JSON).
func (p *publisher) Codec() runtime.Codec {
	if cp, ok := p.p.(codecProvider); ok {
		return cp.Codec()
	}
	return nil
}

func (p *publisher) Publish(ctx context.Context, queue string, msg runtime.Message) error {
	var kind runtime.BrokerKind
	k, known := p.p.(interface{ Kind() runtime.BrokerKind })
	if known {
		kind = k.Kind()
	}
	destination, name := queue, queue
	var key string
	if kind == runtime.RabbitMQ {
		key = cmp.Or(msg.RoutingKey, queue)
		destination, name = msg.Exchange, cmp.Or(msg.Exchange, key)
	}
	attrs := []attribute.KeyValue{
		semconv.MessagingDestinationName(destination),
		semconv.MessagingOperationTypeSend,
		semconv.MessagingOperationName("send"),
	}
	if key != "" {
		attrs = append(attrs, semconv.MessagingRabbitMQDestinationRoutingKey(key))
	}
	if known {
		attrs = append(attrs, system(kind))
	}
	if msg.ID != "" {
		attrs = append(attrs, semconv.MessagingMessageID(msg.ID))
	}
	if msg.Type != "" {
		attrs = append(attrs, MessageTypeKey.String(msg.Type))
	}
	ctx, span := p.o.tracer.Start(ctx, "send "+name, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	defer span.End()
	headers := make(map[string]string, len(msg.Headers)+2)
	for k, v := range msg.Headers {
		headers[k] = v
	}
	p.o.props.Inject(ctx, propagation.MapCarrier(headers))
	msg.Headers = headers
	err := p.p.Publish(ctx, queue, msg)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// carrier reads a propagator's fields from message headers, in any case:
// RabbitMQ keeps a header name's case, so a sender may have written
// Traceparent.
type carrier map[string]string

func (c carrier) Get(key string) string {
	if v, ok := c[key]; ok {
		return v
	}
	for k, v := range c {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return ""
}

func (c carrier) Set(key, value string) { c[key] = value }

func (c carrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// setter writes a propagator's fields through a copy's header setter.
type setter func(name, value string)

func (s setter) Get(string) string     { return "" }
func (s setter) Set(key, value string) { s(key, value) }
func (s setter) Keys() []string        { return nil }
