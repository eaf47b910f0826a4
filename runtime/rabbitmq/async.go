package rabbitmq

import (
	"context"
	"errors"
	"fmt"

	"github.com/streamgen/streamgen/runtime"
)

// The Broker has the PublishAsync method runtime.PublishAsync sends through.
var _ interface {
	PublishAsync(context.Context, string, runtime.Message, func(error))
} = (*Broker)(nil)

// PublishAsync sends msg to the queue of that name as Publish does
// (persistent, mandatory, confirmed), but returns once it is sent: done
// gets the outcome Publish would have returned, once, from the goroutine
// that reads the broker's confirms (so done must not block), or before
// PublishAsync returns when msg could not be sent. Up to the publish
// window (WithPublishWindow) of messages await their confirm at once;
// while that many do, PublishAsync waits for a confirm first, or for ctx
// to end. A message to an exchange (runtime.Publish's to a runtime.Exchange) is published as
// Publish does, done getting the outcome before PublishAsync returns.
// Generated typed publishers call it through runtime.PublishAsync.
func (b *Broker) PublishAsync(ctx context.Context, queue string, msg runtime.Message, done func(error)) {
	if msg.Exchange != "" || msg.RoutingKey != "" || msg.AllowUnroutable {
		// Through an exchange the publish waits for its confirm, as
		// Publish does.
		done(b.Publish(ctx, queue, msg))
		return
	}
	w := b.pub.window
	select {
	case w <- struct{}{}:
	default:
		select {
		case w <- struct{}{}:
		case <-ctx.Done():
			done(publishError(msg.Type, queue, ctx.Err()))
			return
		}
	}
	b.mu.Lock()
	now := b.clock.Now()
	b.mu.Unlock()
	a := &asyncPublish{window: w, msgType: msg.Type, done: done}
	a.key, a.receiver = queue, a
	if err := b.pub.publishAsyncTo(ctx, queue, publishingOf(msg, now), &a.pendingPublish); err != nil {
		a.outcome(err)
	}
}

// asyncPublish is a message of PublishAsync: its pending publish (whose
// key is the queue), the place it holds in the publish window, and where
// its outcome goes.
type asyncPublish struct {
	pendingPublish
	window  chan struct{}
	msgType string
	done    func(error)
}

// outcome frees the message's place in the window and reports err as
// Publish would.
func (a *asyncPublish) outcome(err error) {
	<-a.window
	a.done(publishError(a.msgType, a.key, err))
}

// publishError is what Publish returns for the outcome err of a message of
// type msgType sent to queue.
func publishError(msgType, queue string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrUnroutable):
		return unroutableQueue(msgType, queue, err)
	}
	return fmt.Errorf("rabbitmq: publish %s to %q: %w", msgType, queue, err)
}

// unroutableQueue is the error of a message of type msgType published to
// queue by name, through the default exchange, that the broker returned
// (err): there is no queue of that name.
func unroutableQueue(msgType, queue string, err error) error {
	return fmt.Errorf("rabbitmq: publish %s to %q: %w: there is no queue %q: declare the queue first (a subscription on it declares it when it starts)", msgType, queue, err, queue)
}
