// Package otelstream traces and measures a streamgen App with
// OpenTelemetry. It is a package of its own so that an App that does not
// import it does not link OpenTelemetry: package runtime only defines the
// observe.Observer seam that this package implements.
//
//	obs, err := otelstream.New(otelstream.WithTracerProvider(tp), otelstream.WithMeterProvider(mp))
//	app := runtime.NewApp("billing", runtime.WithObserver(obs))
//	billing.Mount(app, rb)
//	pub := obs.Publisher(rb) // typed publishers take it in place of rb
//
// # Spans
//
// Each delivery is a consumer span named "process <queue>", after the
// OpenTelemetry messaging semantic conventions: messaging.system
// ("rabbitmq", "zeromq"), messaging.destination.name (the subscription),
// messaging.operation.type "process", messaging.operation.name
// "process", messaging.message.id, and streamgen's streamgen.attempt,
// streamgen.retry_count, streamgen.max_attempts, streamgen.message_type,
// streamgen.verdict (ack, retry, park, reject, drop) and, for a message
// that never reached a handler, streamgen.poison. A delivery that was not
// acknowledged, or whose verdict could not be carried out, ends with
// status Error and the reason. A publish through Observer.Publisher is a
// producer span. On RabbitMQ its messaging.destination.name is the
// exchange, as the semantic conventions say ("" for the default exchange,
// which a publish to a queue by name goes through), and
// messaging.rabbitmq.destination.routing_key its routing key; it is "send
// <exchange>", or "send <queue>" through the default exchange. On ZeroMQ
// messaging.destination.name is the queue, and the span "send <queue>".
//
// # Propagation: one causal chain
//
// The span's context travels in the message headers as W3C trace context
// (traceparent, tracestate) and baggage: a publish through
// Observer.Publisher injects its span's, and every retry copy and dead
// letter the runtime sends injects the span of the delivery it copies
// (through observe.DeliveryObservation.CopyHeaders), on both brokers.
// Each delivery's span is the child of the span its message carries. A
// message's publish, each attempt, its parking and the dead-letter
// queue's reading of it are therefore one trace, each span the child of
// the one before: a chain, not links, so that a trace view shows the
// attempts in order under the publish. A message that carries no context
// starts a new trace.
//
// # Metrics
//
//   - streamgen.handler.duration: a histogram of handler calls, in
//     seconds, by subscription and verdict;
//   - streamgen.deliveries.in_flight: deliveries being processed;
//   - streamgen.reconnects: reconnects the brokers report (RabbitMQ's
//     consuming connection, a ZeroMQ subscription that dials its
//     ventilator);
//   - streamgen.publish.confirm.duration: how long RabbitMQ took to
//     confirm each publish, retry copy and dead letter;
//   - streamgen.copies.waiting: ZeroMQ retry copies waiting for their
//     delay in memory, by subscription;
//   - streamgen.outbox.backlog and streamgen.outbox.oldest_age: the
//     messages an outbox holds and how long, in seconds, the oldest has
//     waited, by streamgen.task, while the App runs the outbox's relay
//     (runtime/outbox).
//
// The in-process counters (App.Stats) go on as they are.
package otelstream
