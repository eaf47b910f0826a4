// Package alerts names no broker: out_retry exists only on ZeroMQ, so
// "alerts" runs there, and "digests", which says nothing, goes with it.
package alerts

import "context"

// Alert wakes someone up.
type Alert struct{ Text string }

// Digest sums up alerts.
type Digest struct{ Count int }

//stream:subscriber "alerts" max_attempts=3 out_retry=self
func Raise(ctx context.Context, a Alert) error { return nil }

//stream:subscriber "digests"
func Summarize(ctx context.Context, d Digest) error { return nil }
