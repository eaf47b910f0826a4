package rabbitmq

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// The runner carries the replies its Consumer builds.
var _ adapter.Replier = (*runner)(nil)

// Reply publishes msg, the reply the Consumer built for the request d, to
// to (the request's reply_to) through the default exchange: transient
// (a reply is worth nothing once its caller is gone, and a direct reply-to
// address dies with its caller's channel), not mandatory (RabbitMQ returns
// every mandatory publish to a direct reply-to address, delivered or not),
// confirmed. It returns once the reply is sent, as Send does, so that the
// handler's slot is free while the broker confirms; done gets the outcome
// off the confirm's goroutine (see reported), and the request is acked
// then. Replies and copies share the runner's bound of publishes awaiting
// their confirm.
func (r *runner) Reply(ctx context.Context, _ *adapter.Delivery, to string, msg runtime.Message, done func(error)) {
	select {
	case r.copies <- struct{}{}:
	default:
		select {
		case r.copies <- struct{}{}:
		case <-ctx.Done():
			done(ctx.Err())
			return
		}
	}
	pub := publishingOf(msg, r.clock.Now())
	pub.DeliveryMode = amqp.Transient
	err := r.b.pub.publishReply(ctx, to, pub, func(err error) { r.reported(done, err) })
	if err != nil {
		<-r.copies
		done(err)
	}
}

// publishReply sends a reply and returns once it is sent; done gets the
// outcome from the goroutine that learns it, and must not block. As a
// copy's, its confirm wait does not time out while the broker blocks the
// connection: the request it answers waits for it. When it returns an
// error, done is never called.
func (p *publisher) publishReply(ctx context.Context, to string, msg amqp.Publishing, done func(error)) error {
	ch, err := p.channel(ctx)
	if err != nil {
		return err
	}
	return ch.start(ctx, &pendingPublish{messageID: msg.MessageId, key: to, hold: true, done: done}, msg)
}
