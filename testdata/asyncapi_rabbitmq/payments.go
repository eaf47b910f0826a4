// Package payments takes three message types on one quorum queue, each with
// its own failure policy, backs off along a ladder of wait queues, and
// consumes its own dead-letter queue.
package payments

import (
	"context"

	"github.com/streamgen/streamgen/runtime"
)

// Charge asks to charge a card.
type Charge struct {
	ID          string `json:"id"`
	AmountCents uint64 `json:"amount_cents"`
}

// Refund gives money back.
type Refund struct {
	ChargeID string `json:"charge_id"`
}

// Ping checks that the worker is alive.
type Ping struct{}

// Capture charges a card. A declined card is worth a few more tries.
//
//stream:subscriber "payments" broker=rabbitmq max_attempts=5 retry_delay=1s,10s,1m dead_letter=payments.dead queue_type=quorum prefetch=20 concurrency=4 max_payload_bytes=64KiB delivery_limit=20 single_active_consumer=true
func Capture(ctx context.Context, c Charge) error { return nil }

// GiveBack refunds a charge; refunds have a queue of their own to park in.
//
//stream:subscriber "payments" max_attempts=3 dead_letter=payments.refunds.dead type=refund.v1
func GiveBack(ctx context.Context, r *Refund, md runtime.Metadata) runtime.Outcome {
	return runtime.Ack()
}

//stream:subscriber "payments"
func Pong(ctx context.Context, p Ping) error { return nil }

// Inspect reads the parked charges, for a person to look at.
//
//stream:subscriber "payments.dead" broker=rabbitmq ack=auto
func Inspect(ctx context.Context, c Charge, md runtime.Metadata) error { return nil }
