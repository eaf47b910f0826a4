// Package fulfil consumes message types declared in another package.
package fulfil

import (
	"context"

	"github.com/streamgen/streamgen/testdata/imported_type/orders"
)

//stream:subscriber "orders" broker=zeromq
func Fulfil(ctx context.Context, o orders.Order) error { return nil }

//stream:subscriber "orders" broker=zeromq
func Refund(ctx context.Context, r *orders.Refund) error { return nil }
