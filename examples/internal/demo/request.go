package demo

import (
	"context"
	"fmt"

	"github.com/streamgen/streamgen/runtime"
)

// Request sends a request through the inner broker, renamed as Publish
// renames a message, so that a typed client reaches the service a
// Prefixed runs; the inner broker must be a runtime.Requester
// (rabbitmq.Broker, streamtest.Broker).
func (p *Prefixed) Request(ctx context.Context, queue string, msg runtime.Message) (runtime.Message, error) {
	r, ok := p.inner.(runtime.Requester)
	if !ok {
		return runtime.Message{}, fmt.Errorf("demo: request to %q: a %T sends no requests", queue, p.inner)
	}
	if msg.Exchange != "" {
		msg.Exchange = p.Name(msg.Exchange)
		return r.Request(ctx, queue, msg)
	}
	return r.Request(ctx, p.Name(queue), msg)
}
