// Package shop consumes three queues on RabbitMQ.
package shop

import "context"

// Order is placed by a customer.
type Order struct{ ID string }

// Payment settles an order.
type Payment struct {
	OrderID string
	Cents   int64
}

// Shipment sends an order.
type Shipment struct{ OrderID, Carrier string }

//stream:subscriber "orders" broker=rabbitmq max_attempts=3
func Place(ctx context.Context, o Order) error { return nil }

//stream:subscriber "payments" broker=rabbitmq max_attempts=5 dead_letter=payments.dead
func Settle(ctx context.Context, p Payment) error { return nil }
