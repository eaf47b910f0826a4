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

// OrderPlaced says a customer placed an order.
type OrderPlaced struct {
	ID         string `json:"id"`
	Customer   string `json:"customer"`
	TotalCents int64  `json:"total_cents"`
	// PaymentFailures is how many deliveries of the order fail before one
	// succeeds, as if the payment service were down that long: 0 succeeds
	// at once, 5 or more never does. It stands in for a real failure.
	PaymentFailures int `json:"payment_failures,omitempty"`
}

// OrderCancelled says a customer cancelled an order.
type OrderCancelled struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Place confirms a placed order once its payment goes through. A failed
// payment is retried along the ladder; an order without a total is parked
// at once.
//
//stream:subscriber "orders.received" broker=rabbitmq max_attempts=5 retry_delay=500ms,1s,2s dead_letter=orders.parked
func Place(ctx context.Context, order OrderPlaced, md runtime.Metadata) error {
	if order.TotalCents <= 0 {
		return runtime.DeadLetter(fmt.Errorf("order %s: %w", order.ID, ErrNoTotal))
	}
	log := messageLogger(md)
	if md.Attempt <= order.PaymentFailures {
		err := fmt.Errorf("order %s: %w", order.ID, ErrPaymentUnavailable)
		log.WarnContext(ctx, "payment failed", "err", err)
		return err
	}
	log.InfoContext(ctx, "order confirmed", "order", order.ID, "customer", order.Customer, "total", cents(order.TotalCents))
	return nil
}

// Cancel records a cancellation. Its policy is its own: three deliveries
// at most, then orders.parked.
//
//stream:subscriber "orders.received" max_attempts=3 dead_letter=orders.parked
func Cancel(ctx context.Context, c OrderCancelled, md runtime.Metadata) error {
	messageLogger(md).InfoContext(ctx, "order cancelled", "order", c.ID, "reason", c.Reason)
	return nil
}

// messageLogger is the default logger with the attributes the runtime also
// logs about a message, so that a handler's lines and the runtime's line up.
func messageLogger(md runtime.Metadata) *slog.Logger {
	return slog.Default().With(
		"subscription", md.Subscription,
		"message_id", md.MessageID,
		"attempt", md.Attempt,
		"max_attempts", md.MaxAttempts)
}

// cents writes an amount of cents as units: 1250 → "12.50".
func cents(n int64) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	return fmt.Sprintf("%s%d.%02d", sign, n/100, n%100)
}
