// Package observe is for those who write an Observer: a tracer, a metrics
// exporter, anything that watches what the runtime does with each delivery
// and what the brokers do besides. runtime/otelstream (OpenTelemetry) and
// runtime/promstream (Prometheus) are two.
//
// An App calls its Observer (runtime.WithObserver) at three points:
//
//   - StartConsumer, when a broker starts a subscription's Consumer, with
//     the subscription's name and message types; the function it returns
//     is called when the Consumer stops.
//   - StartDelivery, for each delivery, once its attempt number is known.
//     It returns the context the handler runs in (a span's, say) and a
//     DeliveryObservation, which can add headers to the delivery's retry
//     copy or dead letter (CopyHeaders, for trace context) and learns how
//     the delivery ended (End, with its Settlement).
//   - BrokerEvent, for what a broker reports besides deliveries: a
//     reconnection, the confirmation of a publish.
//
// An App without an Observer calls none of this and pays nothing for it.
package observe
