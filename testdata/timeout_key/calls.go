// Package calls bounds each handler call with timeout=: per message type,
// on either broker.
package calls

import "context"

// Charge is a card payment.
type Charge struct {
	ID string `json:"id"`
}

// Refund gives a payment back.
type Refund struct {
	ID string `json:"id"`
}

//stream:subscriber "payments" broker=rabbitmq max_attempts=3 timeout=2s
func Pay(ctx context.Context, c Charge) error { return nil }

//stream:subscriber "payments" timeout=1m30s
func GiveBack(ctx context.Context, r Refund) error { return nil }

//stream:subscriber "audit" broker=zeromq timeout=250ms
func Audit(ctx context.Context, c *Charge) error { return nil }
