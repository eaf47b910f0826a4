// Package invoices sets every key a RabbitMQ subscription takes.
package invoices

import (
	"context"

	"github.com/streamgen/streamgen/runtime"
)

// Invoice is billed once.
type Invoice struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
}

//stream:subscriber "invoices" broker=rabbitmq max_attempts=4 retry_delay=15s dead_letter=invoices.dead type=invoice.v1 ack=manual prefetch=20 concurrency=4 max_payload_bytes=64KiB queue_type=quorum delivery_limit=10 single_active_consumer=true
func Bill(ctx context.Context, inv Invoice) error { return nil }

// Receipt is sent once, at most.
type Receipt struct {
	InvoiceID string `json:"invoice_id"`
}

// Mail sends a receipt; a lost one is not worth a retry.
//
//stream:subscriber "receipts" broker=rabbitmq ack=auto queue_type=classic max_payload_bytes=4096
func Mail(ctx context.Context, r *Receipt, md runtime.Metadata) runtime.Outcome {
	return runtime.Ack()
}
