// Package dlqpkg has a RabbitMQ subscription and a ZeroMQ one, each with
// a dead-letter queue, for streamgen dlq serve -pkg.
package dlqpkg

import "context"

type Job struct {
	ID string `json:"id"`
}

//stream:subscriber "streamgen-test.cli.dlqpkg" broker=rabbitmq max_attempts=2 dead_letter=streamgen-test.cli.dlqpkg.parked
func Work(ctx context.Context, job Job) error { return nil }

//stream:subscriber "streamgen-test.cli.dlqpkg.zmq" broker=zeromq dead_letter=streamgen-test.cli.dlqpkg.zmq.dead
func Other(ctx context.Context, job Job) error { return nil }
