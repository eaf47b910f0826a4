package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// BatchFunc is the set of batch handler shapes streamgen accepts for
// messages of type T: the messages as values or pointers, and the
// Metadata of each, in the same order, when the handler declares it.
//
//	func(context.Context, []T) error
//	func(context.Context, []*T) error
//	func(context.Context, []T, []Metadata) error
//	func(context.Context, []*T, []Metadata) error
//
// A nil error acknowledges every message of the batch; any other error
// applies to each message (see OutcomeOf), by its own policy and attempt
// count, except a BatchFailures, which fails only the messages it names.
type BatchFunc[T any] interface {
	func(context.Context, []T) error |
		func(context.Context, []*T) error |
		func(context.Context, []T, []Metadata) error |
		func(context.Context, []*T, []Metadata) error
}

// HandleBatch makes the Handler of a batch subscription (one whose
// Subscription.BatchSize is set): the messages of type messageType are
// decoded into T each, as HandleJSON decodes them (decodeJSON may be nil),
// and passed to fn up to BatchSize at a time. Generated code calls it.
//
// Middleware around a batch call sees the messages as a []*T and a
// Metadata whose Batch holds each message's Metadata.
func HandleBatch[T any, F BatchFunc[T]](messageType string, policy Policy, decodeJSON func(body []byte, v *T) bool, fn F) Handler {
	return Handler{
		Codec:       codecOf[T](),
		MessageType: messageType,
		Policy:      policy,
		decode:      decoderOf(decodeJSON),
		fn:          batchCall[T]{messageType: messageType, fn: batchCallOf[T](fn)},
	}
}

// batchCallOf turns a batch handler of any BatchFunc shape into the one
// shape the Handler calls. It panics on a nil function.
func batchCallOf[T any, F BatchFunc[T]](fn F) func(context.Context, []*T, []Metadata) error {
	var call func(context.Context, []*T, []Metadata) error
	switch f := any(fn).(type) {
	case func(context.Context, []T) error:
		if f != nil {
			call = func(ctx context.Context, msgs []*T, _ []Metadata) error { return f(ctx, values(msgs)) }
		}
	case func(context.Context, []*T) error:
		if f != nil {
			call = func(ctx context.Context, msgs []*T, _ []Metadata) error { return f(ctx, msgs) }
		}
	case func(context.Context, []T, []Metadata) error:
		if f != nil {
			call = func(ctx context.Context, msgs []*T, mds []Metadata) error { return f(ctx, values(msgs), mds) }
		}
	case func(context.Context, []*T, []Metadata) error:
		call = f
	}
	if call == nil {
		panic("runtime: a Handler of a nil batch handler function")
	}
	return call
}

// values copies the messages msgs point to.
func values[T any](msgs []*T) []T {
	vs := make([]T, len(msgs))
	for i, m := range msgs {
		vs[i] = *m
	}
	return vs
}

// BatchFailures is the error a batch handler returns when some of its
// messages failed and the others are handled: each message named by its
// index in the batch fails with its own error, mapped by OutcomeOf (so a
// RetryAfter, DeadLetter or Drop applies to that message alone), and
// every other message is acknowledged.
//
//	var failed runtime.BatchFailures
//	for i, row := range rows {
//		if err := insert(ctx, row); err != nil {
//			failed.Fail(i, err)
//		}
//	}
//	return failed.Err()
//
// The zero BatchFailures is empty and ready to use.
type BatchFailures struct {
	errs map[int]error
}

// errFailedInBatch is the reason of a message failed with a nil error.
var errFailedInBatch = errors.New("failed in its batch")

// Fail fails the message at index i of the batch with err; a nil err
// fails it with the reason "failed in its batch". Failing it again
// replaces its error.
func (f *BatchFailures) Fail(i int, err error) {
	if err == nil {
		err = errFailedInBatch
	}
	if f.errs == nil {
		f.errs = make(map[int]error)
	}
	f.errs[i] = err
}

// Err returns f when a message failed, and nil when none did, so that a
// handler can return it in every case.
func (f *BatchFailures) Err() error {
	if f == nil || len(f.errs) == 0 {
		return nil
	}
	return f
}

// Failed returns the error the message at index i failed with, or nil
// when it did not fail.
func (f *BatchFailures) Failed(i int) error {
	if f == nil {
		return nil
	}
	return f.errs[i]
}

// Indexes returns the indexes of the failed messages, in order.
func (f *BatchFailures) Indexes() []int {
	if f == nil {
		return nil
	}
	is := make([]int, 0, len(f.errs))
	for i := range f.errs {
		is = append(is, i)
	}
	slices.Sort(is)
	return is
}

// Error names how many messages failed, and the first ones with their
// errors.
func (f *BatchFailures) Error() string {
	is := f.Indexes()
	var b strings.Builder
	fmt.Fprintf(&b, "%d of the batch's messages failed", len(is))
	for n, i := range is {
		if n == 3 {
			fmt.Fprintf(&b, "; and %d more", len(is)-n)
			break
		}
		fmt.Fprintf(&b, "; message %d: %v", i, f.errs[i])
	}
	return b.String()
}
