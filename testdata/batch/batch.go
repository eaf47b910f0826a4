// Package rows writes rows in batches: a method that takes pointers and
// each message's metadata, a function that takes values, and a ZeroMQ
// batch with retries.
package rows

import (
	"context"

	"github.com/streamgen/streamgen/runtime"
)

// Row is one row to insert.
type Row struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// Event is counted.
type Event struct {
	Kind string `json:"kind"`
}

// Metric is measured.
type Metric struct {
	Value float64 `json:"value"`
}

// Writer inserts rows into its table.
type Writer struct {
	Table string
}

// Insert writes a batch of rows at once, failing only those it could not
// write.
//
//stream:subscriber "rows" broker=rabbitmq batch_size=100 batch_wait=50ms max_attempts=3 dead_letter=rows.dead
func (w *Writer) Insert(ctx context.Context, rows []*Row, mds []runtime.Metadata) error {
	var failed runtime.BatchFailures
	for i, r := range rows {
		if r.ID == 0 {
			failed.Fail(i, runtime.DeadLetter(nil))
		}
	}
	return failed.Err()
}

// Count counts events, up to 10 a call, waiting the default for more.
//
//stream:subscriber "events" broker=rabbitmq batch_size=10 prefetch=20 concurrency=2
func Count(ctx context.Context, events []Event) error { return nil }

// Measure takes metrics over ZeroMQ, by value with their metadata.
//
//stream:subscriber "metrics" broker=zeromq batch_size=50 batch_wait=1s max_attempts=2 out_retry=self
func Measure(ctx context.Context, ms []Metric, mds []runtime.Metadata) error { return nil }
