// Package orders declares publishers that would send to a queue by name
// although the queue is bound to an exchange: the message would go around
// the exchange, and the other queues bound to it would never see it.
package orders

import "context"

// OrderPlaced is sent to the queue of Place by name.
//
//stream:publisher queue=orders.received
type OrderPlaced struct{ ID string }

// OrderShipped is sent to the queue of Ship by name.
//
//stream:publisher queue=orders.shipped broker=rabbitmq
type OrderShipped struct{ ID string }

// Place takes what the orders exchange routes with order.placed.
//
//stream:subscriber "orders.received" exchange=orders binding=order.placed
func Place(ctx context.Context, o OrderPlaced) error { return nil }

// Ship takes every order event.
//
//stream:subscriber "orders.shipped" exchange=orders binding=order.#
func Ship(ctx context.Context, o OrderShipped) error { return nil }

// Tick is sent to the queue of Count by name.
//
//stream:publisher queue=ticks.counted
type Tick struct{ N int }

// Count takes every tick of the fanout exchange ticks.
//
//stream:subscriber "ticks.counted" exchange=ticks exchange_type=fanout
func Count(ctx context.Context, t Tick) error { return nil }
