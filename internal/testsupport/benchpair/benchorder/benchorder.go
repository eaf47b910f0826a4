// Package benchorder holds the JSON decoder streamgen generates for
// benchpair.Order, the message type of the benchmarks: a handler of it
// (Consume, which does nothing) makes streamgen write the decoder into
// streamgen_gen.go, and Decode hands it to the benchmarks, which build
// their Subscriptions as generated code does, with runtime.HandleJSON.
package benchorder

import (
	"context"

	"github.com/streamgen/streamgen/internal/testsupport/benchpair"
)

//go:generate go run github.com/streamgen/streamgen/cmd/streamgen

// Consume is the handler that the decoder is generated for.
//
//stream:subscriber "bench.orders"
func Consume(ctx context.Context, o *benchpair.Order) error { return nil }

// Quote is the handler that answers the request/reply benchmark's
// requests; the decoder of benchpair.Quote is generated for it.
//
//stream:subscriber "bench.quotes"
func Quote(ctx context.Context, q benchpair.Quote) (benchpair.Price, error) {
	return benchpair.PriceOf(q), nil
}
