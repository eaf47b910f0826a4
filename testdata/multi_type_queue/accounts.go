// Package accounts handles three message types on one queue, each with its
// own failure policy; the queue-level keys are set once and apply to all.
package accounts

import (
	"context"

	"github.com/streamgen/streamgen/runtime"
)

// Opened is sent when an account is opened.
type Opened struct{ Account string }

// Closed is sent when an account is closed.
type Closed struct{ Account string }

// Frozen is sent when an account is frozen.
type Frozen struct{ Account, Reason string }

//stream:subscriber "accounts" broker=rabbitmq retry_delay=5s prefetch=10 max_attempts=5 dead_letter=accounts.dead
func Open(ctx context.Context, ev Opened) error { return nil }

//stream:subscriber "accounts" max_attempts=2 dead_letter=accounts.closed.dead prefetch=10
func Close(ctx context.Context, ev Closed) error { return nil }

//stream:subscriber "accounts"
func Freeze(ctx context.Context, ev Frozen, md runtime.Metadata) runtime.Outcome {
	return runtime.Ack()
}
