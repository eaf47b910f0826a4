// Package shop consumes order events from a topic exchange on two queues,
// and publishes what it ships.
package shop

import "context"

// OrderPlaced is published when a customer places an order.
type OrderPlaced struct {
	ID string `json:"id"`
}

// OrderCancelled is published when a customer cancels one.
type OrderCancelled struct {
	ID string `json:"id"`
}

// Shipped is what the shop publishes once a parcel leaves.
//
//stream:publisher exchange=shipping routing_key=parcel.shipped
type Shipped struct {
	Parcel string `json:"parcel"`
}

// Receipt is sent to a queue by name.
//
//stream:publisher queue=receipts broker=rabbitmq
type Receipt struct {
	ID string `json:"id"`
}

// Ship ships a placed order.
//
//stream:subscriber "shipping.orders" exchange=orders binding=order.placed,order.cancelled max_attempts=3 retry_delay=1s,10s dead_letter=shipping.dead
func Ship(ctx context.Context, o OrderPlaced) error { return nil }

// Stop stops a cancelled one.
//
//stream:subscriber "shipping.orders"
func Stop(ctx context.Context, o OrderCancelled) error { return nil }

// Audit sees every order event, on a queue of its own.
//
//stream:subscriber "audit" exchange=orders binding=order.#
func Audit(ctx context.Context, o OrderPlaced) error { return nil }

// Keep keeps the receipts the shop sends itself.
//
//stream:subscriber "receipts"
func Keep(ctx context.Context, r Receipt) error { return nil }

// Refund goes to an exchange that has the name of a queue: the two are
// different channels.
//
//stream:publisher exchange=receipts routing_key=refund
type Refund struct {
	ID string `json:"id"`
}

// Note goes to a queue by name on whichever broker the publisher is given.
//
//stream:publisher queue=notes
type Note struct {
	Text string `json:"text"`
}
