package orders

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/streamgen/streamgen/runtime"
)

//go:generate go tool streamgen
//go:generate go tool streamgen -asyncapi asyncapi.yaml

// ErrPaymentUnavailable is why an order fails while the payment service is
// down.
var ErrPaymentUnavailable = errors.New("the payment service is unavailable")

// ErrNoTotal is why an order without a total can never be confirmed.
var ErrNoTotal = errors.New("the order has no total")

// OrderPlaced says a customer placed an order. It is published to the
// topic exchange orders with the routing key order.placed, and every queue
// bound for it gets a copy.
//
//stream:publisher exchange=orders routing_key=order.placed
type OrderPlaced struct {
	ID         string `json:"id"`
	Customer   string `json:"customer"`
	TotalCents int64  `json:"total_cents"`
	// PaymentFailures is how many deliveries of the order fail before one
	// succeeds, as if the payment service were down that long: 0 succeeds
	// at once, 5 or more never does. It stands in for a real failure.
	PaymentFailures int `json:"payment_failures,omitempty"`
}

// OrderCancelled says a customer cancelled an order. It is published to
// the orders exchange with the routing key order.cancelled.
//
//stream:publisher exchange=orders routing_key=order.cancelled
type OrderCancelled struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Place confirms a placed order once its payment goes through. A failed
// payment is retried along the ladder; an order without a total is parked
// at once. Its queue, orders.received, is bound to the orders exchange for
// the placed and the cancelled orders.
//
//stream:subscriber "orders.received" broker=rabbitmq exchange=orders binding=order.placed,order.cancelled max_attempts=5 retry_delay=500ms,1s,2s dead_letter=orders.parked
func Place(ctx context.Context, order OrderPlaced, md runtime.Metadata) error {
	if order.TotalCents <= 0 {
		return runtime.DeadLetter(fmt.Errorf("order %s: %w", order.ID, ErrNoTotal))
	}
	if md.Attempt <= order.PaymentFailures {
		err := fmt.Errorf("order %s: %w", order.ID, ErrPaymentUnavailable)
		slog.LogAttrs(ctx, slog.LevelWarn, "payment failed", messageAttrs(md, slog.Any("err", err))...)
		return err
	}
	slog.LogAttrs(ctx, slog.LevelInfo, "order confirmed", messageAttrs(md,
		slog.String("order", order.ID), slog.String("customer", order.Customer), slog.String("total", cents(order.TotalCents)))...)
	return nil
}

// Cancel records a cancellation. Its policy is its own: three deliveries
// at most, then orders.parked.
//
//stream:subscriber "orders.received" max_attempts=3 dead_letter=orders.parked
func Cancel(ctx context.Context, c OrderCancelled, md runtime.Metadata) error {
	slog.LogAttrs(ctx, slog.LevelInfo, "order cancelled", messageAttrs(md,
		slog.String("order", c.ID), slog.String("reason", c.Reason))...)
	return nil
}

// AuditPlaced records a placed order for the audit trail. The audit has a
// queue of its own, bound to the orders exchange for every order event
// (order.#): it gets its own copy of each, whatever the other queues do
// with theirs, and never sees their retries.
//
//stream:subscriber "orders.audit" broker=rabbitmq exchange=orders binding=order.#
func AuditPlaced(ctx context.Context, order OrderPlaced, md runtime.Metadata) error {
	slog.LogAttrs(ctx, slog.LevelInfo, "audited", messageAttrs(md,
		slog.String("event", md.MessageType), slog.String("order", order.ID))...)
	return nil
}

// AuditCancelled records a cancellation for the audit trail.
//
//stream:subscriber "orders.audit"
func AuditCancelled(ctx context.Context, c OrderCancelled, md runtime.Metadata) error {
	slog.LogAttrs(ctx, slog.LevelInfo, "audited", messageAttrs(md,
		slog.String("event", md.MessageType), slog.String("order", c.ID))...)
	return nil
}

// messageAttrs returns the attributes the runtime also logs about a
// message, then attrs, so that a handler's lines and the runtime's line up.
// Pass them to slog.LogAttrs at the call: a logger made With them for each
// message would cost its handler work even when the level is off.
func messageAttrs(md runtime.Metadata, attrs ...slog.Attr) []slog.Attr {
	return append([]slog.Attr{
		slog.String("subscription", md.Subscription),
		slog.String("message_id", md.MessageID),
		slog.Int("attempt", md.Attempt),
		slog.Int("max_attempts", md.MaxAttempts),
	}, attrs...)
}

// cents writes an amount of cents as units: 1250 → "12.50".
func cents(n int64) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	return fmt.Sprintf("%s%d.%02d", sign, n/100, n%100)
}
