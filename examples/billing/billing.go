package billing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

//go:generate go tool streamgen
//go:generate go tool streamgen -asyncapi asyncapi.yaml

// Backoff is how long a failed job waits before its next delivery.
const Backoff = 30 * time.Second

// ErrGatewayUnavailable is why a job fails while the payment gateway is
// down.
var ErrGatewayUnavailable = errors.New("the payment gateway is unavailable")

// ErrNoAmount is why an invoice without an amount cannot be sent.
var ErrNoAmount = errors.New("the invoice has no amount")

// Job asks to charge a customer.
type Job struct {
	ID          uint64 `json:"id"`
	AmountCents uint64 `json:"amount_cents"`
	// FailAttempts is how many deliveries of the job fail before one
	// succeeds, as if the payment gateway were down that long: 0 succeeds
	// at once, 5 or more never does. It stands in for a real failure.
	FailAttempts int `json:"fail_attempts,omitempty"`
}

// Invoice is an invoice to send to a customer.
type Invoice struct {
	ID          uint64 `json:"id"`
	AmountCents uint64 `json:"amount_cents"`
}

// Work charges a job. When the charge fails it asks for another try after
// Backoff; the annotation allows five deliveries in all.
//
//stream:subscriber "jobs" broker=zeromq max_attempts=5 out_retry=self
func Work(ctx context.Context, job Job, md runtime.Metadata) error {
	if md.Attempt <= job.FailAttempts {
		err := fmt.Errorf("charge job %d: %w", job.ID, ErrGatewayUnavailable)
		slog.LogAttrs(ctx, slog.LevelWarn, "charge failed", messageAttrs(md, slog.Any("err", err))...)
		return runtime.RetryAfter(Backoff, err)
	}
	slog.LogAttrs(ctx, slog.LevelInfo, "job charged", messageAttrs(md,
		slog.Uint64("job", job.ID), slog.String("amount", cents(job.AmountCents)))...)
	return nil
}

// SendInvoice sends an invoice. An invoice without an amount fails; the
// annotation parks a failed invoice on invoices.dead without retrying it.
//
//stream:subscriber "invoices" broker=zeromq dead_letter=invoices.dead
func SendInvoice(ctx context.Context, inv Invoice, md runtime.Metadata) error {
	if inv.AmountCents == 0 {
		return fmt.Errorf("invoice %d: %w", inv.ID, ErrNoAmount)
	}
	slog.LogAttrs(ctx, slog.LevelInfo, "invoice sent", messageAttrs(md,
		slog.Uint64("invoice", inv.ID), slog.String("amount", cents(inv.AmountCents)))...)
	return nil
}

// Park keeps the invoices nobody could send, for a person to look at: it
// logs each one with the reason the runtime parked it for.
//
//stream:subscriber "invoices.dead" broker=zeromq
func Park(ctx context.Context, inv Invoice, md runtime.Metadata) error {
	slog.LogAttrs(ctx, slog.LevelError, "invoice parked for a person to look at", messageAttrs(md,
		slog.Uint64("invoice", inv.ID),
		slog.String("from", md.Headers[runtime.HeaderDeadLetterSource]),
		slog.String("attempts", md.Headers[runtime.HeaderDeadLetterAttempts]),
		slog.String("reason", md.Headers[runtime.HeaderDeadLetterReason]))...)
	return nil
}

// messageAttrs returns the attributes the runtime also logs about a
// message, then attrs, so that a handler's lines and the runtime's line up.
// Pass them to slog.LogAttrs at the call: a logger made With them for each
// message would cost its handler work even when the level is off.
func messageAttrs(md runtime.Metadata, attrs ...slog.Attr) []slog.Attr {
	return append([]slog.Attr{
		slog.String("subscription", md.Subscription),
		slog.String("message_id", md.MessageID),
		slog.Int("attempt", md.Attempt),
		slog.Int("max_attempts", md.MaxAttempts),
	}, attrs...)
}

// cents writes an amount of cents as units: 1250 → "12.50".
func cents(n uint64) string {
	return fmt.Sprintf("%d.%02d", n/100, n%100)
}
