package rabbitmq

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/streamgen/streamgen/runtime"
)

// The Broker has the PublishAsync method runtime.PublishAsync sends through.
var _ interface {
	PublishAsync(context.Context, string, runtime.Message, func(error))
} = (*Broker)(nil)

// PublishAsync sends msg as Publish does (persistent, mandatory unless
// msg.AllowUnroutable, confirmed; to the queue of that name, or through
// msg.Exchange), but returns once it is sent: done gets the outcome
// Publish would have returned, once, from the goroutine that reads the
// broker's confirms (so done must not block), or before PublishAsync
// returns when msg could not be sent. Up to the publish window
// (WithPublishWindow) of messages await their confirm at once; while that
// many do, PublishAsync waits for a confirm first, or for ctx to end.
// Generated typed publishers call it through runtime.PublishAsync.
func (b *Broker) PublishAsync(ctx context.Context, queue string, msg runtime.Message, done func(error)) {
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
	// As Publish: a message to a queue by name, or one through an
	// exchange (or with a routing key of its own), whose errors say so.
	a.routed = msg.Exchange != "" || msg.RoutingKey != "" || msg.AllowUnroutable
	a.exchange, a.key, a.mandatory, a.receiver = msg.Exchange, cmp.Or(msg.RoutingKey, queue), !msg.AllowUnroutable, a
	if err := b.pub.publishAsyncTo(ctx, publishingOf(msg, now), &a.pendingPublish); err != nil {
		a.outcome(err)
	}
}

// asyncPublish is a message of PublishAsync: its pending publish (whose
// exchange and key are the message's route), the place it holds in the
// publish window, and where its outcome goes.
type asyncPublish struct {
	pendingPublish
	window  chan struct{}
	msgType string
	routed  bool // through an exchange or with a routing key: Publish's publishTo
	done    func(error)
}

// outcome frees the message's place in the window and reports err as
// Publish would.
func (a *asyncPublish) outcome(err error) {
	<-a.window
	if a.routed {
		a.done(routeError(a.msgType, a.exchange, a.key, err))
		return
	}
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
