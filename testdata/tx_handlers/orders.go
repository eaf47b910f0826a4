// Package orders has handlers that take a *sql.Tx, in every accepted
// shape: the message by value or by pointer, with or without the
// delivery's metadata, returning error or runtime.Outcome, as functions
// and as methods.
package orders

import (
	"context"
	"database/sql"

	"github.com/streamgen/streamgen/runtime"
)

// A is the message of ValueError.
type A struct{ N int }

// B is the message of PointerError.
type B struct{ N int }

// C is the message of ValueOutcome.
type C struct{ N int }

// D is the message of PointerOutcome.
type D struct{ N int }

// E is the message of ValueErrorMetadata.
type E struct{ N int }

// F is the message of PointerErrorMetadata.
type F struct{ N int }

// G is the message of ValueOutcomeMetadata.
type G struct{ N int }

// H is the message of PointerOutcomeMetadata.
type H struct{ N int }

//stream:subscriber "a" broker=rabbitmq
func ValueError(ctx context.Context, tx *sql.Tx, msg A) error { return nil }

//stream:subscriber "b" broker=rabbitmq
func PointerError(ctx context.Context, tx *sql.Tx, msg *B) error { return nil }

//stream:subscriber "c" broker=rabbitmq
func ValueOutcome(ctx context.Context, tx *sql.Tx, msg C) runtime.Outcome { return runtime.Ack() }

//stream:subscriber "d" broker=rabbitmq
func PointerOutcome(ctx context.Context, tx *sql.Tx, msg *D) runtime.Outcome { return runtime.Ack() }

//stream:subscriber "e" broker=rabbitmq max_attempts=3 dead_letter=e.dead
func ValueErrorMetadata(ctx context.Context, tx *sql.Tx, msg E, md runtime.Metadata) error { return nil }

//stream:subscriber "f" broker=rabbitmq
func PointerErrorMetadata(ctx context.Context, tx *sql.Tx, msg *F, md runtime.Metadata) error {
	return nil
}

// Service holds what its handlers need.
type Service struct {
	Table string
}

// Place is a method with a pointer receiver.
//
//stream:subscriber "g" broker=rabbitmq
func (s *Service) Place(ctx context.Context, tx *sql.Tx, msg G, md runtime.Metadata) runtime.Outcome {
	return runtime.Ack()
}

// Ship is a method with a value receiver, on a queue shared with a handler
// that takes no transaction.
//
//stream:subscriber "h" broker=rabbitmq
func (s Service) Ship(ctx context.Context, tx *sql.Tx, msg *H, md runtime.Metadata) runtime.Outcome {
	return runtime.Ack()
}

// I is a message handled without a transaction.
type I struct{ N int }

// Plain takes no transaction.
//
//stream:subscriber "h" broker=rabbitmq
func Plain(ctx context.Context, msg I) error { return nil }
