// Package reports says broker=rabbitmq once; every other subscription of the
// package runs on RabbitMQ too.
package reports

import "context"

// Report is rendered.
type Report struct{ Name string }

// Export is written to a file.
type Export struct{ Name, Format string }

//stream:subscriber "reports" broker=rabbitmq max_attempts=2
func Render(ctx context.Context, r Report) error { return nil }

//stream:subscriber "exports" max_attempts=3 dead_letter=exports.dead
func Write(ctx context.Context, e Export) error { return nil }
