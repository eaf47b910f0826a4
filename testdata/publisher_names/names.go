// Package names consumes the same Go type on several subscriptions, and two
// types named Order: the typed publishers get names that do not collide.
package names

import (
	"context"

	"github.com/streamgen/streamgen/testdata/publisher_names/orders"
)

// Job is consumed on two queues.
type Job struct{ ID int }

// Order is this package's order, not orders.Order.
type Order struct{ Ref string }

// Event is consumed twice on one queue, under two wire types.
type Event struct{ Name string }

//stream:subscriber "jobs" broker=rabbitmq
func Work(ctx context.Context, j Job) error { return nil }

//stream:subscriber "jobs.urgent" broker=rabbitmq
func WorkNow(ctx context.Context, j Job) error { return nil }

//stream:subscriber "orders" broker=rabbitmq
func Take(ctx context.Context, o Order) error { return nil }

//stream:subscriber "orders" broker=rabbitmq type=external.order
func TakeExternal(ctx context.Context, o orders.Order) error { return nil }

//stream:subscriber "events" broker=rabbitmq type=event.v1
func EventV1(ctx context.Context, e Event) error { return nil }

//stream:subscriber "events" broker=rabbitmq type=event.v2
func EventV2(ctx context.Context, e Event) error { return nil }
