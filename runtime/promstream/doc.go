// Package promstream measures a streamgen App for Prometheus, through the
// Prometheus Go client (github.com/prometheus/client_golang). It is a
// package of its own so that an App that does not import it does not link
// the client: package runtime only defines the observe.Observer seam that
// this package implements, as runtime/otelstream does for OpenTelemetry.
//
// A Collector is both: the App's Observer, and a prometheus.Collector that
// is registered with the registry that is scraped.
//
//	metrics := promstream.New()
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(metrics)
//	app := runtime.NewApp("billing", runtime.WithObserver(metrics))
//	billing.Mount(app, zq)
//	http.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// To label every series with the service, register through
// prometheus.WrapRegistererWith(prometheus.Labels{"service": "billing"}, reg).
//
// # Metrics
//
//   - streamgen_deliveries_total{broker, subscription}: deliveries
//     received, poison included;
//   - streamgen_settled_total{broker, subscription, message_type, outcome}:
//     deliveries settled, outcome being acked, retried, parked (sent to a
//     dead-letter queue), rejected, dropped, or failed (a verdict the
//     broker adapter could not carry out: the broker then redelivers, or
//     the message was nacked); a handler that panicked counts as the
//     failure it is made into, retried or parked;
//   - streamgen_poison_total{broker, subscription, message_type}: settled
//     deliveries that never reached a handler (no handler for their type,
//     a body that does not decode, a payload too large);
//   - streamgen_handler_duration_seconds{broker, subscription,
//     message_type, outcome}: a histogram of handler calls, middleware
//     included, whose _count is the number of messages handlers were
//     called with;
//   - streamgen_deliveries_in_flight{broker, subscription}: deliveries
//     being processed;
//   - streamgen_reconnects_total{broker}: reconnects the brokers report
//     (RabbitMQ's consuming connection, a ZeroMQ subscription that dials
//     its ventilator);
//   - streamgen_publish_confirm_duration_seconds{broker, outcome}: how
//     long RabbitMQ took to confirm each publish, retry copy and dead
//     letter, outcome being confirmed or failed;
//   - streamgen_copies_waiting{broker, subscription}: ZeroMQ retry copies
//     waiting for their delay in memory;
//   - the gauges of the App's tasks (runtime.WithTask), labelled by task:
//     the outbox relay (runtime/outbox) reports
//     streamgen_outbox_backlog{task}, the messages the outbox holds
//     (committed, not yet confirmed by the broker), and
//     streamgen_outbox_oldest_age_seconds{task}, how long the oldest has
//     waited.
//
// broker is "rabbitmq" or "zeromq". The counters of a subscription's
// message types and outcomes, and the reconnects of its broker, start at
// zero when its consumer starts, so that a rate over them is defined
// before the first event.
//
// # Cardinality
//
// Every label takes a bounded set of values: the App's subscriptions, the
// message types their handlers take, the six outcomes. No message id, no
// reason and no header becomes a label. A delivery whose type no handler
// of its subscription takes is counted with message_type "_OTHER"
// (OtherMessageType), whatever type the sender wrote, and one that carries
// no type with message_type "".
//
// The in-process counters (App.Stats) go on as they
// are; a Collector counts on its own, from what the Observer is told.
package promstream
