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
// publishes); confirms are awaited concurrently, by a publisher waiting
// (publish) or by a callback (publishAsync). One goroutine drains the
// channel's confirm, return and close notifications until the channel
// closes, so the connection's reader never blocks on them. One timer for
// the whole channel fails the publishes not confirmed in time.
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
	expiry   runtime.Timer // set while publishes await their confirm
	waiters  sync.Pool     // *pendingPublish of publish, with their result channel

	done chan struct{} // closed when the drain goroutine returns
}

// pendingPublish is a message awaiting its confirm.
type pendingPublish struct {
	seq       uint64
	messageID string
	// exchange ("" for the default), the routing key (the queue, through
	// the default exchange) and whether the publish is mandatory.
	exchange  string
	key       string
	mandatory bool
	// deadline is when the publish fails with ErrNoConfirm; zero until
	// the message is sent.
	deadline time.Time
	returned *amqp.Return
	// The outcome goes to result (publish waits on it) or to done
	// (publishAsync); result is buffered, so no sender ever blocks on it.
	result chan error
	done   func(error)
}

// finish reports the outcome.
func (p *pendingPublish) finish(err error) {
	if p.done != nil {
		p.done(err)
		return
	}
	p.result <- err
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
	c.waiters.New = func() any { return &pendingPublish{result: make(chan error, 1)} }
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
		p.finish(ErrNacked)
	case p.returned != nil:
		p.finish(fmt.Errorf("%w (%d %s)", ErrUnroutable, p.returned.ReplyCode, p.returned.ReplyText))
	default:
		p.finish(nil)
	}
}

// failAll fails every pending publish with err and refuses new ones.
func (c *confirmChannel) failAll(err error) {
	c.mu.Lock()
	c.closed = true
	if c.closeErr != nil {
		err = fmt.Errorf("%w: %v", err, c.closeErr)
	}
	failed := make([]*pendingPublish, 0, len(c.pending))
	for seq, p := range c.pending {
		failed = append(failed, p)
		delete(c.pending, seq)
	}
	c.mu.Unlock()
	for _, p := range failed {
		p.finish(err)
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
	p := c.waiters.Get().(*pendingPublish)
	p.messageID, p.exchange, p.key, p.mandatory = msg.MessageId, exchange, key, mandatory
	if err := c.start(ctx, p, msg); err != nil {
		c.recycle(p)
		return err
	}
	select {
	case err := <-p.result:
		c.recycle(p)
		return err
	case <-ctx.Done():
		if c.forget(p) {
			c.recycle(p)
		} // else its outcome is on the way to p.result: p is left to the collector
		return ctx.Err()
	}
}

// recycle puts p, which nothing refers to any more, back for another
// publish.
func (c *confirmChannel) recycle(p *pendingPublish) {
	*p = pendingPublish{result: p.result}
	c.waiters.Put(p)
}

// publishAsync sends msg, mandatory, to queue through the default exchange
// and returns once it is sent; done gets the outcome publish would have
// returned, from the goroutine that learns it (it must not block). When
// publishAsync returns an error, done is never called.
func (c *confirmChannel) publishAsync(ctx context.Context, queue string, msg amqp.Publishing, done func(error)) error {
	return c.start(ctx, &pendingPublish{messageID: msg.MessageId, key: queue, mandatory: true, done: done}, msg)
}

// start sends msg for p and awaits its confirm from now on; the confirm
// timeout starts once the message is sent. On error p is awaited no more.
func (c *confirmChannel) start(ctx context.Context, p *pendingPublish, msg amqp.Publishing) error {
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
	err := c.ch.PublishWithContext(ctx, p.exchange, p.key, p.mandatory, false, msg)
	if err == nil {
		c.mu.Lock()
		if c.pending[p.seq] == p {
			p.deadline = c.clock.Now().Add(c.timeout)
			c.expireLaterLocked()
		}
		c.mu.Unlock()
	}
	c.send.Unlock()
	if err == nil {
		return nil
	}
	if !c.forget(p) {
		// The channel closed meanwhile and failAll reported it.
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, amqp.ErrClosed) {
		return fmt.Errorf("%w: %v", ErrChannelClosed, err)
	}
	return fmt.Errorf("send: %w", err)
}

// expireLaterLocked sets the timer that fails the publishes not confirmed
// in time, unless it is set. It fires every quarter of the timeout while
// publishes await their confirm, so a publish fails between 1 and 1.25
// timeouts after it was sent.
func (c *confirmChannel) expireLaterLocked() {
	if c.expiry == nil && !c.closed {
		c.expiry = c.clock.AfterFunc(max(c.timeout/4, time.Millisecond), c.expire)
	}
}

// expire fails the publishes whose deadline has passed.
func (c *confirmChannel) expire() {
	c.mu.Lock()
	c.expiry = nil
	now := c.clock.Now()
	var expired []*pendingPublish
	for seq, p := range c.pending {
		if !p.deadline.IsZero() && !now.Before(p.deadline) {
			expired = append(expired, p)
			delete(c.pending, seq)
		}
	}
	if len(c.pending) > 0 {
		c.expireLaterLocked()
	}
	c.mu.Unlock()
	if len(expired) > 0 {
		err := fmt.Errorf("%w (waited %s)", ErrNoConfirm, c.timeout)
		for _, p := range expired {
			p.finish(err)
		}
	}
}

// forget stops awaiting p, and reports whether it was still awaited: when
// not, its outcome was (or is being) reported. A confirm arriving later is
// ignored.
func (c *confirmChannel) forget(p *pendingPublish) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[p.seq] != p {
		return false
	}
	delete(c.pending, p.seq)
	return true
}

// close closes the channel and waits until its notifications are drained.
func (c *confirmChannel) close() {
	_ = c.ch.Close()
	<-c.done
	c.mu.Lock()
	if c.expiry != nil {
		c.expiry.Stop()
		c.expiry = nil
	}
	c.mu.Unlock()
}
