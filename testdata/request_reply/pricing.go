// Package pricing answers requests: handlers that return a reply and an
// error, in every shape (the request and the reply by value or by pointer,
// with or without the metadata, functions and methods), and the typed
// clients streamgen writes for them.
package pricing

import (
	"context"
	"errors"

	"github.com/streamgen/streamgen/runtime"
)

// QuoteRequest asks for the price of a SKU.
type QuoteRequest struct {
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
}

// Price is a quote's reply.
type Price struct {
	SKU   string `json:"sku"`
	Cents int64  `json:"cents"`
}

// StockRequest asks how many of a SKU are left.
type StockRequest struct {
	SKU string `json:"sku"`
}

// Stock is a stock request's reply.
type Stock struct {
	Left int `json:"left"`
}

// Discount asks for a customer's discount.
type Discount struct {
	Customer string `json:"customer"`
}

// Percent is a discount's reply.
type Percent struct {
	Value float64 `json:"value"`
}

// Ping asks a pricing node whether it is up.
type Ping struct{}

// Pong answers a Ping.
type Pong struct {
	Node string `json:"node"`
}

var errUnknown = errors.New("unknown SKU")

//stream:subscriber "pricing.quotes" broker=rabbitmq max_attempts=3 retry_delay=1s dead_letter=pricing.quotes.dl
func Quote(ctx context.Context, q QuoteRequest) (Price, error) {
	if q.SKU == "" {
		return Price{}, runtime.DeadLetter(errUnknown)
	}
	return Price{SKU: q.SKU, Cents: 250 * int64(q.Quantity)}, nil
}

//stream:subscriber "pricing.stock" concurrency=8
func StockLeft(ctx context.Context, s *StockRequest, md runtime.Metadata) (*Stock, error) {
	return &Stock{Left: 3}, nil
}

// Service holds what the method handlers need.
type Service struct {
	Node string
}

//stream:subscriber "pricing.discounts" timeout=2s
func (s *Service) Discount(ctx context.Context, d Discount, md runtime.Metadata) (Percent, error) {
	return Percent{Value: 5}, nil
}

//stream:subscriber "pricing.ping"
func (s Service) Ping(ctx context.Context, p *Ping) (Pong, error) {
	return Pong{Node: s.Node}, nil
}

// RateRequest asks for an exchange rate; it is sent in MessagePack.
type RateRequest struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Rate is a rate request's reply.
type Rate struct {
	Value float64 `json:"value"`
}

// TaxRequest asks for the tax of an amount; it is sent in CBOR.
type TaxRequest struct {
	Cents int64 `json:"cents"`
}

// Tax is a tax request's reply.
type Tax struct {
	Cents int64 `json:"cents"`
}

// ExchangeRate answers in MessagePack a request its typed client sends in
// MessagePack.
//
//stream:subscriber "pricing.rates" codec=msgpack
func ExchangeRate(ctx context.Context, r RateRequest) (Rate, error) {
	return Rate{Value: 1.25}, nil
}

// Tax answers in CBOR a request its typed client sends in CBOR.
//
//stream:subscriber "pricing.taxes" codec=cbor
func (s *Service) Tax(ctx context.Context, t *TaxRequest) (*Tax, error) {
	return &Tax{Cents: t.Cents / 5}, nil
}
