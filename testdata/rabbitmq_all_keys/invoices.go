// Package invoices sets every key a RabbitMQ subscription takes.
package invoices

import "context"

// Invoice is billed once.
type Invoice struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
}

//stream:subscriber "invoices" broker=rabbitmq max_attempts=4 retry_delay=15s dead_letter=invoices.dead type=invoice.v1 ack=manual prefetch=20 concurrency=4 max_payload_bytes=64KiB queue_type=quorum
func Bill(ctx context.Context, inv Invoice) error { return nil }
