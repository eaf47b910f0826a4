package orders

import "context"

// OrderPlaced is published when a customer places an order.
//
//stream:publisher exchange=orders routing_key=order.placed
type OrderPlaced struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

// OrderCancelled goes to the same exchange under another key, with a
// wire type of its own.
//
//stream:publisher exchange=orders routing_key=order.cancelled type=order.cancelled.v1
type OrderCancelled struct {
	ID string `json:"id"`
}

// Tick goes to a fanout exchange, which needs no routing key.
//
//stream:publisher exchange=ticks
type Tick struct{ N int }

type (
	// Receipt goes to a queue by name.
	//
	//stream:publisher queue=receipts broker=rabbitmq
	Receipt struct{ ID string }

	// Invoice is not published.
	Invoice struct{ ID string }
)

// Bill consumes what this package also publishes: its own publisher for
// OrderPlaced, to the billing queue, is named after the queue, and
// PublishOrderPlaced is the one the directive declares.
//
//stream:subscriber "billing" exchange=orders binding=order.placed
func Bill(ctx context.Context, o OrderPlaced) error { return nil }

//stream:subscriber "receipts"
func Keep(ctx context.Context, r Receipt) error { return nil }
