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

// Bill consumes what this package also publishes. Its queue is bound to
// the orders exchange, so it gets no publisher of its own (one to the
// billing queue would go around the exchange): PublishOrderPlaced, the
// one the directive declares, is the publisher of OrderPlaced.
//
//stream:subscriber "billing" exchange=orders binding=order.placed
func Bill(ctx context.Context, o OrderPlaced) error { return nil }

// Keep consumes the receipts PublishReceipt sends to its queue by name:
// that is its publisher, and no second one is generated.
//
//stream:subscriber "receipts"
func Keep(ctx context.Context, r Receipt) error { return nil }
