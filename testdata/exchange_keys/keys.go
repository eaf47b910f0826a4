package exchangekeys

import "context"

// OrderPlaced is an event.
type OrderPlaced struct{ ID int }

// OrderCancelled is an event.
type OrderCancelled struct{ ID int }

// Audit sees every event of the orders exchange.
type Audit struct{ ID int }

//stream:subscriber "billing" exchange=orders binding=order.placed,order.cancelled max_attempts=3
func Bill(ctx context.Context, o OrderPlaced) error { return nil }

//stream:subscriber "billing"
func Refund(ctx context.Context, o OrderCancelled) error { return nil }

//stream:subscriber "shipping" exchange=orders exchange_type=topic binding=order.*.eu,order.#
func Ship(ctx context.Context, o OrderPlaced) error { return nil }

//stream:subscriber "audit" exchange=events exchange_type=fanout
func Record(ctx context.Context, a Audit) error { return nil }

//stream:subscriber "mail" exchange=mail exchange_type=direct binding=welcome
func Mail(ctx context.Context, a Audit) error { return nil }
