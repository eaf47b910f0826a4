package replies

import (
	"context"
	"database/sql"

	"github.com/streamgen/streamgen/runtime"
)

// Job is work.
type Job struct{ ID int }

// Done is a reply.
type Done struct{ ID int }

type done struct{ ID int }

// Box is generic.
type Box[T any] struct{ V T }

// Leaky cannot be decoded from JSON.
type Leaky struct{ C chan int }

//stream:subscriber "pushes" broker=zeromq
func Push(ctx context.Context, j Job) (Done, error) { return Done{}, nil }

//stream:subscriber "second" broker=rabbitmq
func Second(ctx context.Context, j Job) (Done, bool) { return Done{}, true }

//stream:subscriber "basic" broker=rabbitmq
func Basic(ctx context.Context, j Job) (int, error) { return 0, nil }

//stream:subscriber "private" broker=rabbitmq
func Private(ctx context.Context, j Job) (done, error) { return done{}, nil }

//stream:subscriber "generic" broker=rabbitmq
func Generic(ctx context.Context, j Job) (Box[int], error) { return Box[int]{}, nil }

//stream:subscriber "leaky" broker=rabbitmq
func Leak(ctx context.Context, j Job) (*Leaky, error) { return nil, nil }

//stream:subscriber "tx" broker=rabbitmq
func InTx(ctx context.Context, tx *sql.Tx, j Job) (Done, error) { return Done{}, nil }

//stream:subscriber "batch" broker=rabbitmq batch_size=10
func Batch(ctx context.Context, js []Job) (Done, error) { return Done{}, nil }

//stream:subscriber "taken" broker=rabbitmq
func Taken(ctx context.Context, j Job) (Done, error) { return Done{}, nil }

// RequestTaken is the user's own.
func RequestTaken() {}

// A is one service.
type A struct{}

// B is another.
type B struct{}

//stream:subscriber "a.work" broker=rabbitmq
func (A) Work(ctx context.Context, j Job) (Done, error) { return Done{}, nil }

//stream:subscriber "b.work" broker=rabbitmq
func (B) Work(ctx context.Context, j Job) (Done, error) { return Done{}, nil }

//stream:subscriber "a.other" broker=rabbitmq
func AWork(ctx context.Context, j Job) (Done, error) { return Done{}, nil }

//stream:subscriber "inferred" max_attempts=2 out_retry=self
func Inferred(ctx context.Context, j Job) (Done, error) { return Done{}, nil }
