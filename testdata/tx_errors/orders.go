// Package orders gets handlers that take a transaction wrong in every way
// the generator reports.
package orders

import (
	"context"
	"database/sql"

	"github.com/streamgen/streamgen/runtime"
)

// Order is placed by a customer.
type Order struct {
	ID string `json:"id"`
}

//stream:subscriber "value" broker=rabbitmq
func Value(ctx context.Context, tx sql.Tx, o Order) error { return nil }

//stream:subscriber "db" broker=rabbitmq
func DB(ctx context.Context, db *sql.DB, o Order) error { return nil }

//stream:subscriber "after" broker=rabbitmq
func After(ctx context.Context, o Order, tx *sql.Tx) error { return nil }

//stream:subscriber "last" broker=rabbitmq
func Last(ctx context.Context, o Order, md runtime.Metadata, tx *sql.Tx) error { return nil }

//stream:subscriber "alone" broker=rabbitmq
func Alone(ctx context.Context, tx *sql.Tx) error { return nil }

//stream:subscriber "five" broker=rabbitmq
func Five(ctx context.Context, tx *sql.Tx, o Order, md runtime.Metadata, n int) error { return nil }

//stream:subscriber "fourth" broker=rabbitmq
func Fourth(ctx context.Context, tx *sql.Tx, o Order, n int) error { return nil }

//stream:subscriber "batch" broker=rabbitmq batch_size=10
func Batch(ctx context.Context, tx *sql.Tx, os []Order) error { return nil }

//stream:subscriber "auto" broker=rabbitmq ack=auto
func Auto(ctx context.Context, tx *sql.Tx, o Order) error { return nil }
