// Package shapes has one handler of every accepted shape: the message by
// value or by pointer, returning error or runtime.Outcome, with or without
// the delivery's metadata.
package shapes

import (
	"context"

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

//stream:subscriber "a"
func ValueError(ctx context.Context, msg A) error { return nil }

//stream:subscriber "b"
func PointerError(ctx context.Context, msg *B) error { return nil }

//stream:subscriber "c"
func ValueOutcome(ctx context.Context, msg C) runtime.Outcome { return runtime.Ack() }

//stream:subscriber "d"
func PointerOutcome(ctx context.Context, msg *D) runtime.Outcome { return runtime.Ack() }

//stream:subscriber "e"
func ValueErrorMetadata(ctx context.Context, msg E, md runtime.Metadata) error { return nil }

//stream:subscriber "f"
func PointerErrorMetadata(ctx context.Context, msg *F, md runtime.Metadata) error { return nil }

//stream:subscriber "g"
func ValueOutcomeMetadata(ctx context.Context, msg G, md runtime.Metadata) runtime.Outcome {
	if md.Attempt > 1 {
		return runtime.DeadLetterNow()
	}
	return runtime.Retry()
}

//stream:subscriber "h"
func PointerOutcomeMetadata(_ context.Context, _ *H, _ runtime.Metadata) runtime.Outcome {
	return runtime.DropNow()
}
