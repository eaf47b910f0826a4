// Package events sets every key a ZeroMQ subscription takes: retry copies go
// to another queue, exhausted events to a dead-letter queue.
package events

import "context"

// Event is something that happened.
type Event struct {
	Kind string `json:"kind"`
}

//stream:subscriber "events" broker=zeromq max_attempts=3 out_retry=events.retry dead_letter=events.dead type=event prefetch=5 concurrency=2 max_payload_bytes=2MiB
func Record(ctx context.Context, ev *Event) error { return nil }

//stream:subscriber "events.retry" broker=zeromq max_attempts=3 out_retry=self dead_letter=events.dead type=event max_payload_bytes=1048576
func RecordLater(ctx context.Context, ev *Event) error { return nil }
