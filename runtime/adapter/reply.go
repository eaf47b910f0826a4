package adapter

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/streamgen/streamgen/runtime"
)

// Replier is what the Transport of a broker that carries replies
// (RabbitMQ, the harness) also does: send the reply the Consumer built for
// a request (see runtime.HandleReply). It decides nothing: the Consumer
// builds every reply, its body, correlation id and headers.
type Replier interface {
	// Reply sends msg to the address to, the request d's reply_to
	// (RabbitMQ: a queue by name through the default exchange, or a
	// direct reply-to address), without the mandatory flag (RabbitMQ
	// returns every reply to a direct reply-to address that is published
	// mandatory, delivered or not), and calls done once with the outcome:
	// nil once the reply is sent (or, where the transport awaits the
	// broker's confirm, once the broker took it), else the error that
	// stopped it. A reply to a caller that is gone is dropped by the
	// broker: nil. The Consumer acknowledges the request once done(nil)
	// came. An error reply follows the request's dead letter: a transport
	// that sends copies on one channel sends it after the copy, on that
	// channel. done(nil) must not block; done(err) may, so a transport
	// calls it where that holds up no delivery and no other outcome.
	Reply(ctx context.Context, d *Delivery, to string, msg runtime.Message, done func(error))
}

// repliesOf reports whether a handler of sub answers requests.
func repliesOf(sub *runtime.Subscription) bool {
	for i := range sub.Handlers {
		if _, ok := sub.Handlers[i].Replies(); ok {
			return true
		}
	}
	return false
}

// answer sends the reply of d, a delivery of a subscription that answers
// requests, whose verdict v is final; it reports whether it carried v
// out itself, and then the verdict and the error d was settled with, as
// finish returns them. A retry sends nothing: the next attempt answers. A
// handler's reply goes out first, and d is acknowledged once the broker
// took it (see replying); an error reply (the request was parked, dropped
// or rejected) goes out once v is carried out. A request without a
// reply_to is handled all the same, with a warning that no reply could
// be sent.
func (c *Consumer) answer(ctx context.Context, d *Delivery, v Verdict) (Verdict, error, bool) {
	if v.Kind == VerdictRetry || v.Kind == VerdictRelease || v.Kind == VerdictIsolate {
		// Not settled for good: a retry, a delivery handed back, or one
		// set aside to run alone after a crash is answered when it is.
		return v, nil, false
	}
	replyType, replies := "", true
	i := c.handlerIndex(d.Type)
	if i >= 0 {
		// A message no handler takes is answered too: its caller waits.
		replyType, replies = c.sub.Handlers[i].Replies()
	}
	if !replies {
		return v, nil, false // a message of a handler that does not reply
	}
	if d.ReplyTo == "" {
		c.logSettled(slog.LevelWarn, "the request has no reply_to, so no reply could be sent; it is settled as its handler's outcome says", d, v, "outcome", v.Kind.String())
		return v, nil, false
	}
	tr, ok := c.send.(Replier)
	if !ok {
		c.logSettled(slog.LevelError, "this broker carries no replies, so none was sent (request/reply needs RabbitMQ)", d, v)
		return v, nil, false
	}
	msg := c.replyMessage(d, v, i, replyType)
	to := d.ReplyTo
	// The handler has run: its reply goes out even once shutdown cancels
	// the handlers' context.
	sendCtx := context.WithoutCancel(ctx)
	if v.Kind == VerdictAck && msg.Headers[runtime.HeaderReplyError] == "" {
		r := &replying{c: c, ctx: ctx, d: d, v: v}
		c.copies.Add(1)
		tr.Reply(sendCtx, d, to, msg, r.done)
		if r.state.CompareAndSwap(copySending, copyReturned) {
			return v, nil, true // settled later, by done
		}
		return v, r.err, true
	}
	// An error reply follows the verdict: the caller told that its
	// request was parked finds it parked (on RabbitMQ the dead letter
	// and the reply leave on one channel, in that order).
	err := c.carryOut(ctx, d, &v)
	c.copies.Add(1)
	// The function below keeps its own copy of the verdict: were it to
	// capture v, v would live on the heap for every request, answered
	// or not.
	settled := v
	tr.Reply(sendCtx, d, to, msg, func(err error) {
		if err != nil {
			c.logSettled(slog.LevelWarn, "the error reply could not be sent; the caller waits until its deadline", d, settled, "reply_to", to, "err", err)
		}
		c.copies.Done()
	})
	return v, err, true
}

// replyMessage builds the reply to d, whose verdict v is final and whose
// handler is handler i (-1: none): for an acknowledged request, the reply
// its handler returned, of type replyType, in the codec the request was read with when that encodes it
// (encodeReply); for any other verdict, an error
// reply (runtime.HeaderReplyError). Either carries d's correlation id,
// or d's message id when it has none, and nothing else a caller does not
// read: no message id (a reply is matched by its correlation id, and no
// Consumer reads it), no timestamp.
func (c *Consumer) replyMessage(d *Delivery, v Verdict, i int, replyType string) runtime.Message {
	var m runtime.Message
	m.CorrelationID = cmp.Or(d.CorrelationID, d.MessageID)
	fail := func(reason string) runtime.Message {
		m.Headers = map[string]string{runtime.HeaderReplyError: shortReason(reason)}
		if v.Kind == VerdictPark {
			m.Headers[runtime.HeaderReplyDeadLetter] = v.Queue
		}
		return m
	}
	if v.Kind != VerdictAck {
		return fail(v.Reason)
	}
	if d.reply == nil {
		return fail("the request was handled, but its reply never reached the runtime: a middleware returned an Outcome of its own instead of next's")
	}
	body, contentType, reason := c.encodeReply(d, i)
	if reason != "" {
		return fail("the request was handled, but " + reason)
	}
	m.Type, m.ContentType, m.Body = replyType, contentType, body
	return m
}

// replying is a handler's reply whose outcome the Transport has yet to
// report; done settles the request.
type replying struct {
	c   *Consumer
	ctx context.Context
	d   *Delivery
	v   Verdict
	// state and err as sending's.
	state  atomic.Int32
	called atomic.Bool
	err    error
}

// done acknowledges the request once its reply was sent. A reply that
// could not be sent (the publishing channel closed, the broker refused
// it) hands the request back, after settleCopy's pause, so that it is
// handled again and answered then: at least once, as everything else.
func (r *replying) done(err error) {
	if r.called.Swap(true) {
		return
	}
	c, d := r.c, r.d
	if err == nil {
		c.sendFailures.Store(0)
		r.err = c.ack(r.ctx, d)
	} else {
		r.err = c.replyFailed(r.ctx, d, err)
	}
	c.settle(d, r.v, r.err, false)
	r.state.CompareAndSwap(copySending, copySettled)
	c.copies.Done()
}

// replyFailed settles d, whose reply could not be sent for err, and
// returns the error it was settled with.
func (c *Consumer) replyFailed(ctx context.Context, d *Delivery, err error) error {
	switch {
	case c.acks == nil:
		return fmt.Errorf("the reply to %q could not be sent: %w", d.ReplyTo, err)
	case c.auto:
		return fmt.Errorf("the reply to %q could not be sent: %w; with ack=auto the request is not handled again", d.ReplyTo, err)
	}
	c.pause(requeuePause(c.sendFailures.Add(1)))
	if rerr := c.acks.Requeue(ctx, d); rerr != nil {
		return fmt.Errorf("the reply to %q could not be sent: %w; the consuming channel is gone too, so the broker delivers the request again", d.ReplyTo, err)
	}
	return fmt.Errorf("the reply to %q could not be sent: %w; the request is handed back (nacked with requeue), to be handled and answered again", d.ReplyTo, err)
}
