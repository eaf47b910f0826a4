// Package orders keeps its handlers' dependencies in structs: methods with
// pointer and value receivers of two types, next to a top-level function.
package orders

import (
	"context"

	"github.com/streamgen/streamgen/runtime"
)

// Order is placed by a customer.
type Order struct {
	ID string `json:"id"`
}

// Refund gives money back.
type Refund struct {
	OrderID string `json:"order_id"`
}

// Audit records what happened.
type Audit struct {
	Line string `json:"line"`
}

// Service holds what the order handlers need: here, where they say what
// they handled.
type Service struct {
	Seen chan<- string
}

// Place handles a placed order.
//
//stream:subscriber "orders" broker=rabbitmq max_attempts=3 dead_letter=orders.dead
func (s *Service) Place(ctx context.Context, o Order) error {
	s.Seen <- "placed " + o.ID
	return nil
}

// Refund handles a refund, on the orders queue and on its own.
//
//stream:subscriber "orders" broker=rabbitmq
//stream:subscriber "refunds" broker=rabbitmq
func (s *Service) Refund(ctx context.Context, r *Refund, md runtime.Metadata) runtime.Outcome {
	s.Seen <- "refunded " + r.OrderID + " from " + md.Subscription
	return runtime.Ack()
}

// Ledger writes audit lines; its methods take it by value.
type Ledger struct {
	Prefix string
	Out    chan<- string
}

// Record writes an audit line.
//
//stream:subscriber "audit" broker=rabbitmq
func (l Ledger) Record(ctx context.Context, a Audit) error {
	l.Out <- l.Prefix + a.Line
	return nil
}

// Place is a top-level function with the name of a method.
//
//stream:subscriber "orders.legacy" broker=rabbitmq
func Place(ctx context.Context, o Order) error { return nil }
