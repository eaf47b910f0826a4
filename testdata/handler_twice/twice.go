// Package twice mounts one function on two subscriptions.
package twice

import "context"

// Task is done wherever it comes from.
type Task struct{ ID int }

// Do handles tasks from both queues.
//
//stream:subscriber "tasks" broker=rabbitmq max_attempts=3
//stream:subscriber "tasks.backfill" broker=rabbitmq prefetch=1
func Do(ctx context.Context, t Task) error { return nil }
