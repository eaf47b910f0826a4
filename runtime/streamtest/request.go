package streamtest

import (
	"context"
	"errors"
	"fmt"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// ReplyAddress is the reply_to of the requests a Broker sends (Request):
// the Consumer sends their replies there, and the Broker hands each to
// the request waiting for it. A reply no request waits for (it came after
// its caller's deadline) is kept in the queue of that name, for Queue.
const ReplyAddress = "streamtest.reply-to"

var (
	_ runtime.Requester = (*Broker)(nil)
	_ adapter.Replier   = (*memTransport)(nil)
)

// replyBox holds the requests waiting for their reply, by correlation id.
type replyBox struct {
	waiting map[string]chan runtime.Message
}

// Request sends msg to queue, as Publish does, with ReplyAddress as its
// reply_to, and waits for the reply with msg's correlation id: a handler
// of runtime.HandleReply answers in process, once it ran, and so does
// the Consumer with an error reply once a request is parked or dropped.
// Generated typed clients call it through runtime.Request:
//
//	price, err := pricing.RequestQuote(ctx, h.Broker(), pricing.QuoteRequest{SKU: "A-1"})
//
// It returns an error wrapping ctx's when ctx ends first. Request waits
// in real time while the clock stands still: a request whose handler
// failed and waits for a retry on the clock (a wait queue's TTL, a
// ZeroMQ retry delay) is answered once another goroutine advances the
// clock past it.
func (b *Broker) Request(ctx context.Context, queue string, msg runtime.Message) (runtime.Message, error) {
	corr := msg.CorrelationID
	if corr == "" {
		return runtime.Message{}, fmt.Errorf("streamtest: request to %q: the message has no correlation id: send it with runtime.Request, which sets one", queue)
	}
	msg.ReplyTo = ReplyAddress
	got := make(chan runtime.Message, 1)
	b.mu.Lock()
	if b.replies.waiting == nil {
		b.replies.waiting = map[string]chan runtime.Message{}
	}
	if _, dup := b.replies.waiting[corr]; dup {
		b.mu.Unlock()
		return runtime.Message{}, fmt.Errorf("streamtest: request to %q: correlation id %q is in flight already: give each request its own", queue, corr)
	}
	b.replies.waiting[corr] = got
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.replies.waiting, corr)
		b.mu.Unlock()
	}()
	if err := b.Publish(ctx, queue, msg); err != nil {
		return runtime.Message{}, err
	}
	select {
	case reply := <-got:
		return reply, nil
	case <-ctx.Done():
		return runtime.Message{}, fmt.Errorf("streamtest: no reply to the request sent to %q: %w", queue, context.Cause(ctx))
	}
}

// Reply hands msg to the request waiting for it when to is ReplyAddress,
// and otherwise puts it at the tail of the queue to, as a broker's
// default exchange would; it reports the outcome before it returns.
func (t *memTransport) Reply(ctx context.Context, _ *adapter.Delivery, to string, msg runtime.Message, done func(error)) {
	done(t.b.reply(ctx, to, msg))
}

func (b *Broker) reply(ctx context.Context, to string, msg runtime.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("streamtest: reply to %q: %w", to, err)
	}
	if to == "" {
		return errors.New("streamtest: reply: the reply_to is empty")
	}
	msg = cloneMessage(msg)
	b.mu.Lock()
	defer b.mu.Unlock()
	if to == ReplyAddress {
		if w, ok := b.replies.waiting[msg.CorrelationID]; ok {
			delete(b.replies.waiting, msg.CorrelationID)
			w <- msg
			return nil
		}
	}
	b.enqueueLocked(to, msg)
	return nil
}
