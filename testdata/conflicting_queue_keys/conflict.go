package conflict

import "context"

// Created is an event.
type Created struct{ ID int }

// Deleted is an event.
type Deleted struct{ ID int }

// Renamed is an event.
type Renamed struct{ ID int }

//stream:subscriber "things" broker=rabbitmq prefetch=5 max_payload_bytes=64KiB retry_delay=10s max_attempts=2
func Create(ctx context.Context, e Created) error { return nil }

//stream:subscriber "things" prefetch=10 max_payload_bytes=65536 retry_delay=10000ms
func Delete(ctx context.Context, e Deleted) error { return nil }

//stream:subscriber "things" broker=zeromq
func Rename(ctx context.Context, e Renamed) error { return nil }
