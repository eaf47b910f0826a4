package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// Why a publish did not land. Publish errors wrap one of these, so callers
// can tell them apart with errors.Is.
var (
	// ErrUnroutable: the broker returned the message (basic.return): no
	// queue of that name exists.
	ErrUnroutable = adapter.ErrUnroutable
	// ErrNacked: the broker refused the message (a publisher nack), for
	// example because the queue is full and rejects publishes.
	ErrNacked = errors.New("refused by the broker (publisher nack)")
	// ErrNoConfirm: the broker did not confirm the message in time.
	ErrNoConfirm = errors.New("no publisher confirm in time")
	// ErrChannelClosed: the channel or connection closed before the
	// broker confirmed the message.
	ErrChannelClosed = errors.New("channel closed before the publisher confirm")
	// ErrClosed: the Broker is shut down or closed.
	ErrClosed = errors.New("the broker is closed")
)

// publishChannel is the part of *amqp091.Channel that confirmed publishing
// uses; tests put a fake in its place.
type publishChannel interface {
	GetNextPublishSeqNo() uint64
	PublishWithContext(ctx context.Context, exchange, key string, mandatory, immediate bool, msg amqp.Publishing) error
	NotifyPublish(confirm chan amqp.Confirmation) chan amqp.Confirmation
	NotifyReturn(c chan amqp.Return) chan amqp.Return
	NotifyClose(c chan *amqp.Error) chan *amqp.Error
	IsClosed() bool
	Close() error
}

// confirmChannel publishes mandatory messages on a channel in confirm mode
// and tells each publisher whether its message landed: a broker ack with no
// basic.return for it. Sends are serialised (a channel must not interleave
// publishes); confirms are awaited concurrently. One goroutine drains the
// channel's confirm, return and close notifications until the channel
// closes, so the connection's reader never blocks on them.
type confirmChannel struct {
	ch      publishChannel
	clock   runtime.Clock
	timeout time.Duration
	log     *slog.Logger

	send sync.Mutex // held across sequence number and publish

	mu       sync.Mutex
	pending  map[uint64]*pendingPublish
	closed   bool
	closeErr error

	done chan struct{} // closed when the drain goroutine returns
}

// pendingPublish is a message awaiting its confirm.
type pendingPublish struct {
	seq       uint64
	messageID string
	key       string
	returned  *amqp.Return
	result    chan error // buffered: the drain goroutine never blocks on it
}

// newConfirmChannel takes over ch, which must already be in confirm mode.
func newConfirmChannel(ch publishChannel, clock runtime.Clock, timeout time.Duration, log *slog.Logger) *confirmChannel {
	c := &confirmChannel{
		ch:      ch,
		clock:   clock,
		timeout: timeout,
		log:     log,
		pending: map[uint64]*pendingPublish{},
		done:    make(chan struct{}),
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 256))
	returns := ch.NotifyReturn(make(chan amqp.Return, 64))
	closes := ch.NotifyClose(make(chan *amqp.Error, 1))
	go c.drain(confirms, returns, closes)
	return c
}

// drain settles pending publishes from the channel's notifications until
// all three notification channels are closed.
func (c *confirmChannel) drain(confirms <-chan amqp.Confirmation, returns <-chan amqp.Return, closes <-chan *amqp.Error) {
	defer close(c.done)
	for confirms != nil || returns != nil || closes != nil {
		select {
		case r, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			c.noteReturn(r)
		case conf, ok := <-confirms:
			if !ok {
				confirms = nil
				c.failAll(ErrChannelClosed)
				continue
			}
			// The broker sends a basic.return before the ack of the same
			// message, and the connection's reader hands them over in that
			// order: a return for this message is already in returns.
			for drained := false; !drained && returns != nil; {
				select {
				case r, ok := <-returns:
					if !ok {
						returns = nil
					} else {
						c.noteReturn(r)
					}
				default:
					drained = true
				}
			}
			c.settle(conf)
		case e, ok := <-closes:
			if !ok {
				closes = nil
				continue
			}
			// Pending publishes fail once the confirms channel closes,
			// after every confirm that arrived before the close is settled.
			c.mu.Lock()
			c.closed = true
			c.closeErr = e
			c.mu.Unlock()
		}
	}
}

// noteReturn marks the oldest unconfirmed publish of the returned message.
func (c *confirmChannel) noteReturn(r amqp.Return) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var oldest *pendingPublish
	for _, p := range c.pending {
		if p.returned == nil && p.messageID == r.MessageId && p.key == r.RoutingKey && (oldest == nil || p.seq < oldest.seq) {
			oldest = p
		}
	}
	if oldest == nil {
		c.log.Debug("rabbitmq: basic.return for a message no longer awaited", "message_id", r.MessageId, "queue", r.RoutingKey, "reply", r.ReplyText)
		return
	}
	oldest.returned = &r
}

// settle reports the broker's confirm to the publish awaiting it.
func (c *confirmChannel) settle(conf amqp.Confirmation) {
	c.mu.Lock()
	p := c.pending[conf.DeliveryTag]
	delete(c.pending, conf.DeliveryTag)
	c.mu.Unlock()
	switch {
	case p == nil:
		// The publisher stopped waiting (timeout or cancelled context).
	case !conf.Ack:
		p.result <- ErrNacked
	case p.returned != nil:
		p.result <- fmt.Errorf("%w (%d %s)", ErrUnroutable, p.returned.ReplyCode, p.returned.ReplyText)
	default:
		p.result <- nil
	}
}

// failAll fails every pending publish with err and refuses new ones.
func (c *confirmChannel) failAll(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.closeErr != nil {
		err = fmt.Errorf("%w: %v", err, c.closeErr)
	}
	for seq, p := range c.pending {
		p.result <- err
		delete(c.pending, seq)
	}
}

// usable reports whether new publishes may use the channel.
func (c *confirmChannel) usable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.closed && !c.ch.IsClosed()
}

// publish sends msg, mandatory, to queue through the default exchange and
// waits for the outcome: nil when the broker confirmed it and did not
// return it; else an error wrapping ErrUnroutable, ErrNacked, ErrNoConfirm,
// ErrChannelClosed, the channel's send error, or ctx's error.
func (c *confirmChannel) publish(ctx context.Context, queue string, msg amqp.Publishing) error {
	return c.publishTo(ctx, "", queue, true, msg)
}

// publishTo is publish through exchange with routing key key, mandatory
// or not: a message that is not mandatory and that no queue is bound for
// is confirmed and dropped by the broker.
func (c *confirmChannel) publishTo(ctx context.Context, exchange, key string, mandatory bool, msg amqp.Publishing) error {
	queue := key
	p := &pendingPublish{messageID: msg.MessageId, key: queue, result: make(chan error, 1)}
	c.send.Lock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.send.Unlock()
		return ErrChannelClosed
	}
	p.seq = c.ch.GetNextPublishSeqNo()
	c.pending[p.seq] = p
	c.mu.Unlock()
	err := c.ch.PublishWithContext(ctx, exchange, queue, mandatory, false, msg)
	c.send.Unlock()
	if err != nil {
		c.forget(p)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if errors.Is(err, amqp.ErrClosed) {
			return fmt.Errorf("%w: %v", ErrChannelClosed, err)
		}
		return fmt.Errorf("send: %w", err)
	}

	timedOut := make(chan struct{})
	t := c.clock.AfterFunc(c.timeout, func() { close(timedOut) })
	defer t.Stop()
	select {
	case err := <-p.result:
		return err
	case <-timedOut:
		c.forget(p)
		return fmt.Errorf("%w (waited %s)", ErrNoConfirm, c.timeout)
	case <-ctx.Done():
		c.forget(p)
		return ctx.Err()
	}
}

// forget stops awaiting p; a confirm arriving later is ignored.
func (c *confirmChannel) forget(p *pendingPublish) {
	c.mu.Lock()
	delete(c.pending, p.seq)
	c.mu.Unlock()
}

// close closes the channel and waits until its notifications are drained.
func (c *confirmChannel) close() {
	_ = c.ch.Close()
	<-c.done
}
