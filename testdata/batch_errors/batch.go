// Package rows gets batch handlers wrong in every way the generator
// reports.
package rows

import (
	"context"

	"github.com/streamgen/streamgen/runtime"
)

// Row is one row to insert.
type Row struct {
	ID int64 `json:"id"`
}

// Other is another message type.
type Other struct {
	N int `json:"n"`
}

// One takes one message, and sets a batch key.
//
//stream:subscriber "one" broker=rabbitmq batch_size=10
func One(ctx context.Context, r Row) error { return nil }

// NoSize takes a batch without batch_size.
//
//stream:subscriber "nosize" broker=rabbitmq
func NoSize(ctx context.Context, rs []Row) error { return nil }

// Small sets a prefetch below its batch.
//
//stream:subscriber "small" broker=rabbitmq batch_size=100 prefetch=50
func Small(ctx context.Context, rs []Row) error { return nil }

// Shared shares its queue with a handler of another type.
//
//stream:subscriber "shared" broker=rabbitmq batch_size=10
func Shared(ctx context.Context, rs []Row) error { return nil }

// SharedOther is the other handler on "shared".
//
//stream:subscriber "shared" broker=rabbitmq
func SharedOther(ctx context.Context, o Other) error { return nil }

// Outcome returns an Outcome for a batch.
//
//stream:subscriber "outcome" broker=rabbitmq batch_size=10
func Outcome(ctx context.Context, rs []Row) runtime.Outcome { return runtime.Ack() }

// OneMetadata takes one Metadata for a batch.
//
//stream:subscriber "onemd" broker=rabbitmq batch_size=10
func OneMetadata(ctx context.Context, rs []Row, md runtime.Metadata) error { return nil }

// BadWait waits no time.
//
//stream:subscriber "badwait" broker=rabbitmq batch_size=10 batch_wait=0s
func BadWait(ctx context.Context, rs []Row) error { return nil }
