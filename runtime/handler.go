package runtime

import (
	"context"
	"fmt"
)

// handlerFunc is the function of a Handler, of one of two kinds:
// singleCall, which takes one message, and batchCall, which takes a batch.
// Either is called with what the Consumer hands the handler's middleware:
// a *T, or the []*T its Gather made of a batch.
type handlerFunc interface {
	call(ctx context.Context, v any, md Metadata) Outcome
}

// singleCall is the function of a handler of one message at a time.
type singleCall[T any] func(ctx context.Context, msg *T, md Metadata) Outcome

func (f singleCall[T]) call(ctx context.Context, v any, md Metadata) Outcome {
	return f(ctx, v.(*T), md)
}

// batchCall is the function of a batch handler: it takes the messages of
// a batch, and each one's Metadata from the batch call's (Metadata.Batch).
type batchCall[T any] struct {
	messageType string
	fn          func(ctx context.Context, msgs []*T, mds []Metadata) error
}

func (b batchCall[T]) call(ctx context.Context, v any, md Metadata) Outcome {
	msgs, ok := v.([]*T)
	if !ok {
		return Retry().Because(fmt.Errorf("runtime: a batch handler of %s was given a %T, not a []*%s", b.messageType, v, b.messageType))
	}
	return OutcomeOf(b.fn(ctx, msgs, md.Batch))
}

// gatherer is the handlerFunc of a batch handler.
type gatherer interface {
	// gather makes the []*T a batch call takes out of the values Decode
	// returned, in order.
	gather(vs []any) any
}

func (b batchCall[T]) gather(vs []any) any {
	msgs := make([]*T, len(vs))
	for i, v := range vs {
		msgs[i] = v.(*T)
	}
	return msgs
}

// Decode decodes body with codec into a new value of the handler's message
// type, for the broker adapters' Consumer (package runtime/adapter).
func (h *Handler) Decode(codec Codec, body []byte) (any, error) {
	return h.decode(codec, body)
}

// Call calls the handler with a value Decode returned or, for a batch
// handler, with the value Gather made of a batch's.
func (h *Handler) Call(ctx context.Context, v any, md Metadata) Outcome {
	return h.fn.call(ctx, v, md)
}

// Batched reports whether h is a batch handler (made by HandleBatch), for the
// broker adapters' Consumer.
func (h *Handler) Batched() bool {
	_, ok := h.fn.(gatherer)
	return ok
}

// Gather makes the message a batch handler is called with out of values
// Decode returned, in order: a []*T. It panics for a handler that is not
// Batched.
func (h *Handler) Gather(vs []any) any {
	b, ok := h.fn.(gatherer)
	if !ok {
		panic(fmt.Sprintf("runtime: Gather on the handler of %s, which takes one message at a time", h.MessageType))
	}
	return b.gather(vs)
}
