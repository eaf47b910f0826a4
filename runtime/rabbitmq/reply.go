package rabbitmq

import (
	"context"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// The runner carries the replies its Consumer builds.
var _ adapter.Replier = (*runner)(nil)

// Reply publishes msg, the reply the Consumer built for the request d, to
// to (the request's reply_to) through the default exchange, transient (a
// reply is worth nothing once its caller is gone, and a direct reply-to
// address dies with its caller's channel) and not mandatory (RabbitMQ
// returns every mandatory publish to a direct reply-to address, delivered
// or not).
//
// A handler's reply goes out on the publishing connection's reply channel
// (replyChannel), which is not in confirm mode, and done gets the outcome
// of the send before Reply returns: the request is acked once its reply is
// sent, as a raw RPC server acks it. A confirm would cost each request a
// frame from the broker and its bookkeeping, and say only that the broker
// routed the reply, which no queue keeps: the caller's channel, or
// nothing. A reply lost with the publishing connection after it was sent
// leaves its caller to its deadline.
//
// An error reply follows the request's dead letter, so it goes out on the
// confirm channel the dead letter went out on, after it (see
// publishReply), and done gets its confirm from the confirm's goroutine;
// error replies and copies share the runner's bound of publishes awaiting
// their confirm.
func (r *runner) Reply(ctx context.Context, _ *adapter.Delivery, to string, msg runtime.Message, done func(error)) {
	pub := replyPublishing(msg)
	if _, failed := msg.Headers[runtime.HeaderReplyError]; !failed {
		ch, err := r.b.pub.replyChannel(ctx)
		if err == nil {
			err = ch.PublishWithContext(ctx, "", to, false, false, pub)
		}
		done(err)
		return
	}
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
	err := r.b.pub.publishReply(ctx, to, pub, func(err error) { r.reported(done, err) })
	if err != nil {
		<-r.copies
		done(err)
	}
}

// replyPublishing is msg, a reply, as an AMQP publishing: transient, with
// what the Consumer set and nothing more (publishingOf would add a
// message id and a timestamp, which a caller does not read).
func replyPublishing(msg runtime.Message) amqp.Publishing {
	var headers amqp.Table
	if len(msg.Headers) > 0 {
		headers = make(amqp.Table, len(msg.Headers))
		for k, v := range msg.Headers {
			headers[k] = v
		}
	}
	return amqp.Publishing{
		Headers:       headers,
		ContentType:   msg.ContentType,
		DeliveryMode:  amqp.Transient,
		CorrelationId: msg.CorrelationID,
		MessageId:     msg.ID,
		Timestamp:     msg.Timestamp,
		Type:          msg.Type,
		AppId:         msg.AppID,
		Body:          msg.Body,
	}
}

// replyChannel returns the channel handlers' replies go out on: a channel
// of the publishing connection, not in confirm mode, opened on first use
// and again once it closed.
func (p *publisher) replyChannel(ctx context.Context) (*amqp.Channel, error) {
	p.mu.Lock()
	ch := p.replies
	p.mu.Unlock()
	if ch != nil && !ch.IsClosed() {
		return ch, nil
	}
	if _, err := p.channel(ctx); err != nil { // connects, or reconnects
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return nil, ErrClosed
	case p.replies != nil && !p.replies.IsClosed():
		return p.replies, nil
	case p.conn == nil:
		return nil, fmt.Errorf("rabbitmq: open the replies' channel: %w", ErrChannelClosed)
	}
	ch, err := p.conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: open the replies' channel: %w", err)
	}
	p.replies = ch
	return ch, nil
}

// publishReply sends an error reply on the confirm channel and returns
// once it is sent; done gets the outcome from the goroutine that learns
// it, and must not block. As a copy's, its confirm wait does not time out
// while the broker blocks the connection. When it returns an error, done
// is never called.
func (p *publisher) publishReply(ctx context.Context, to string, msg amqp.Publishing, done func(error)) error {
	ch, err := p.channel(ctx)
	if err != nil {
		return err
	}
	return ch.start(ctx, &pendingPublish{messageID: msg.MessageId, key: to, hold: true, done: done}, msg)
}
