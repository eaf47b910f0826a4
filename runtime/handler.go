package runtime

import "context"

// Decode decodes body with codec into a new value of the handler's message
// type, for the broker adapters' Consumer (package runtime/adapter).
func (h *Handler) Decode(codec Codec, body []byte) (any, error) {
	return h.decode(codec, body)
}

// Call calls the handler with a value Decode returned.
func (h *Handler) Call(ctx context.Context, v any, md Metadata) Outcome {
	return h.call(ctx, v, md)
}

// Batched reports whether h is a batch handler (made by HandleBatch), for the
// broker adapters' Consumer.
func (h *Handler) Batched() bool { return h.gather != nil }

// Gather makes the message a batch handler is called with out of values
// Decode returned, in order: a []*T. It panics for a handler that is not
// Batched.
func (h *Handler) Gather(vs []any) any { return h.gather(vs) }
