package pricing

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/streamgen/streamgen/runtime"
)

//go:generate go tool streamgen
//go:generate go tool streamgen -asyncapi asyncapi.yaml

// QuoteRequest asks what Quantity of SKU costs.
type QuoteRequest struct {
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
}

// Price is the answer to a QuoteRequest.
type Price struct {
	SKU   string `json:"sku"`
	Cents int64  `json:"cents"`
}

// Service prices SKUs from its catalog of unit prices in cents.
type Service struct {
	Catalog map[string]int64
	// FeedDown, while set, makes every quote fail as a price feed that
	// does not answer would: the request is retried.
	FeedDown atomic.Bool
}

// Quote prices a request. A SKU the catalog lacks can never be priced: the
// request is parked, and its caller told so.
//
//stream:subscriber "pricing.quotes" broker=rabbitmq max_attempts=3 retry_delay=1s dead_letter=pricing.quotes.dead
func (s *Service) Quote(ctx context.Context, q QuoteRequest) (Price, error) {
	unit, ok := s.Catalog[q.SKU]
	switch {
	case !ok:
		return Price{}, runtime.DeadLetter(fmt.Errorf("no price for SKU %q", q.SKU))
	case s.FeedDown.Load():
		return Price{}, fmt.Errorf("the price feed does not answer")
	}
	return Price{SKU: q.SKU, Cents: unit * int64(q.Quantity)}, nil
}
