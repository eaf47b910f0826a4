// Package prefetch sets a prefetch, and a concurrency without one, beyond
// what RabbitMQ's basic.qos carries.
package prefetch

import "context"

// Job is a message.
type Job struct{ ID int }

// Invoice is a message.
type Invoice struct{ ID int }

// Receipt is a message.
type Receipt struct{ ID int }

//stream:subscriber "jobs" broker=rabbitmq prefetch=70000
func Work(ctx context.Context, j Job) error { return nil }

//stream:subscriber "invoices" broker=rabbitmq concurrency=70000
func Bill(ctx context.Context, i Invoice) error { return nil }

//stream:subscriber "receipts" broker=zeromq prefetch=70000
func Send(ctx context.Context, r Receipt) error { return nil }
