// Package quotes answers requests and takes plain messages on one queue,
// and consumes its replies' type elsewhere: what the AsyncAPI document
// says of each.
package quotes

import "context"

// QuoteRequest asks for the price of a SKU.
type QuoteRequest struct {
	SKU string `json:"sku"`
}

// Price answers a QuoteRequest; the package publishes prices too.
//
//stream:publisher queue=prices
type Price struct {
	SKU   string `json:"sku"`
	Cents int64  `json:"cents"`
}

// Invalidate drops a cached price. Nobody waits for an answer.
type Invalidate struct {
	SKU string `json:"sku"`
}

// Discount asks for a customer's discount.
type Discount struct {
	Customer string `json:"customer"`
}

// Percent answers a Discount, and only ever travels as a reply.
type Percent struct {
	Value float64 `json:"value"`
}

// Quote prices a SKU.
//
//stream:subscriber "quotes" broker=rabbitmq max_attempts=2 retry_delay=1s dead_letter=quotes.dead
func Quote(ctx context.Context, q QuoteRequest) (*Price, error) {
	return &Price{SKU: q.SKU, Cents: 100}, nil
}

// Forget drops a cached price; it answers nothing.
//
//stream:subscriber "quotes"
func Forget(ctx context.Context, m Invalidate) error { return nil }

// Discounts answers on the same queue, with another reply type.
//
//stream:subscriber "quotes"
func Discounts(ctx context.Context, d Discount) (Percent, error) {
	return Percent{Value: 5}, nil
}

// Record keeps the prices published: a subscription with no handler that
// replies.
//
//stream:subscriber "prices" broker=rabbitmq
func Record(ctx context.Context, p Price) error { return nil }

// Audit reads a queue named like the replies to quotes, which keeps its
// name in the document.
//
//stream:subscriber "quotes.reply" broker=rabbitmq
func Audit(ctx context.Context, m Invalidate) error { return nil }
