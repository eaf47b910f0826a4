// Package orders is the orders service of streamgen's RabbitMQ example.
// Order events are published once, to the topic exchange orders, with the
// routing keys order.placed and order.cancelled. Two queues are bound to
// it, and each gets its own copy of every event it is bound for:
// orders.received (order.placed, order.cancelled), whose handlers confirm
// and cancel orders, and orders.audit (order.#), which records them. Each
// handler is an ordinary Go function marked with a //stream:subscriber
// annotation; on a queue carrying both message types the worker picks the
// handler by the AMQP type property.
//
//   - Place confirms an OrderPlaced. A payment failure is a plain error:
//     the annotation allows five deliveries, the first included, with a
//     backoff ladder between them (retry_delay=500ms,1s,2s: the first
//     retry waits 500ms, the second 1s, the later ones 2s, each in a wait
//     queue of its own), and parks the order on orders.parked when the
//     fifth delivery fails too. An order without a total can never
//     succeed: Place returns runtime.DeadLetter, which parks it at once.
//   - Cancel handles an OrderCancelled, with a policy of its own: three
//     deliveries at most, then orders.parked.
//   - AuditPlaced and AuditCancelled record every event on orders.audit.
//     The retries of orders.received go back to it through its wait
//     queues and the default exchange, never through orders, so the audit
//     sees each event once.
//
// A message whose type neither handles (or that does not decode) is
// poison: it never reaches a handler and is parked at once. Every parked
// message carries headers that say why (runtime.HeaderDeadLetterReason and
// the others).
//
// go generate writes streamgen_gen.go: Mount, which registers the
// subscriptions on an App (and binds their queues at startup), and the
// typed publishers. The //stream:publisher directives on OrderPlaced and
// OrderCancelled give PublishOrderPlaced and PublishOrderCancelled, which
// publish to the exchange, and they are the only publishers: both queues
// are bound to the exchange, so streamgen generates no publisher that
// would send to one of them by name, around the exchange and the other
// queue. The service's main is in cmd/orders;
// cmd/orders-demo runs it against a local RabbitMQ and tells what happens
// (make demo-rabbitmq). orders_test.go tests the handlers with the
// in-process broker of runtime/streamtest, and rabbitmq_test.go runs them
// on a real broker.
//
// The payment failures are stand-ins for real ones:
// OrderPlaced.PaymentFailures makes the first deliveries of an order fail,
// so that retries can be seen and tested.
package orders
