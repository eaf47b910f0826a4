package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/clock"
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

// publishChannel is what confirmed publishing needs of an amqp091 channel
// in confirm mode (amqpPublishChannel); tests put a fake in its place.
type publishChannel interface {
	// publishDeferred sends msg and returns the broker's confirm of it to
	// come.
	publishDeferred(ctx context.Context, exchange, key string, mandatory bool, msg amqp.Publishing) (deferredConfirm, error)
	NotifyReturn(c chan amqp.Return) chan amqp.Return
	NotifyClose(c chan *amqp.Error) chan *amqp.Error
	IsClosed() bool
	Close() error
}

// deferredConfirm is the broker's confirm of one message: Done is closed
// once it came (or the channel closed), and Acked then says whether it is
// an ack. *amqp091.DeferredConfirmation is one.
type deferredConfirm interface {
	Done() <-chan struct{}
	Acked() bool
}

// amqpPublishChannel is an amqp091 channel in confirm mode.
type amqpPublishChannel struct{ *amqp.Channel }

func (c amqpPublishChannel) publishDeferred(ctx context.Context, exchange, key string, mandatory bool, msg amqp.Publishing) (deferredConfirm, error) {
	dc, err := c.PublishWithDeferredConfirmWithContext(ctx, exchange, key, mandatory, false, msg)
	if err != nil {
		return nil, err
	}
	if dc == nil {
		return nil, errors.New("the channel is not in confirm mode")
	}
	return dc, nil
}

// confirmChannel publishes mandatory messages on a channel in confirm mode
// and tells each publisher whether its message landed: a broker ack with no
// basic.return for it. Sends are serialised (a channel must not interleave
// publishes); confirms are awaited concurrently, by a publisher waiting
// (publish) or by a callback (publishAsync). One goroutine settles the
// messages in the order they were sent, each once its deferred confirm is
// done, and drains the channel's return and close notifications until the
// channel closes, so the connection's reader never blocks on them. The
// reader marks a whole run of deferred confirms done at once for one
// multiple ack, and the goroutine settles the run in one go. One timer for
// the whole channel fails the publishes not confirmed in time.
type confirmChannel struct {
	ch      publishChannel
	clock   clock.Clock
	timeout time.Duration
	log     *slog.Logger
	// held reports whether the broker blocks the channel's connection:
	// the confirm waits of copies (publishCopy) do not time out then. Nil
	// when nothing blocks it.
	held func() bool

	send sync.Mutex // held across queueing and publish, so the queue is in publish order

	mu       sync.Mutex
	pending  pendingQueue // awaiting their confirm, oldest first
	queued   uint64       // publishes queued so far
	closed   bool
	closeErr error
	expiry   clock.Timer // set while publishes await their confirm
	waiters  sync.Pool   // *pendingPublish of publish, with their result channel

	// kick wakes the settling goroutine when the oldest pending publish
	// changed other than by a confirm: one queued when none was, a confirm
	// to come that just became known, one given up on.
	kick chan struct{}
	done chan struct{} // closed when the settling goroutine returns
}

// pendingPublish is a message awaiting its confirm.
type pendingPublish struct {
	// seq numbers the publishes in the order they are queued.
	seq       uint64
	messageID string
	// exchange ("" for the default), the routing key (the queue, through
	// the default exchange) and whether the publish is mandatory.
	exchange  string
	key       string
	mandatory bool
	// hold: while the broker blocks the connection, the confirm wait does
	// not time out (a copy, see publishCopy).
	hold bool
	// confirm is the broker's confirm to come; nil until the message is
	// sent.
	confirm deferredConfirm
	// deadline is when the publish fails with ErrNoConfirm; zero until
	// the message is sent.
	deadline time.Time
	returned *amqp.Return
	// The outcome goes to result (publish waits on it), to done
	// (publishAsync) or to receiver (publishAsyncTo); result is buffered,
	// so no sender ever blocks on it.
	result   chan error
	done     func(error)
	receiver outcomeReceiver
}

// outcomeReceiver takes the outcome of a publish of publishAsyncTo. It
// saves a closure per message to one that holds the pending publish in a
// record of its own.
type outcomeReceiver interface {
	outcome(err error)
}

// finish reports the outcome.
func (p *pendingPublish) finish(err error) {
	switch {
	case p.receiver != nil:
		p.receiver.outcome(err)
	case p.done != nil:
		p.done(err)
	default:
		p.result <- err
	}
}

// pendingQueue holds the publishes awaiting their confirm in the order
// they were sent.
type pendingQueue struct {
	items []*pendingPublish
	head  int
}

func (q *pendingQueue) len() int { return len(q.items) - q.head }

func (q *pendingQueue) push(p *pendingPublish) {
	if q.head > 0 && len(q.items) == cap(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, p)
}

// front returns the oldest, or nil.
func (q *pendingQueue) front() *pendingPublish {
	if q.head == len(q.items) {
		return nil
	}
	return q.items[q.head]
}

func (q *pendingQueue) pop() *pendingPublish {
	p := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return p
}

// all returns the publishes, oldest first; the slice is the queue's own.
func (q *pendingQueue) all() []*pendingPublish { return q.items[q.head:] }

// removeIf takes out the publishes for which drop is true, keeping the
// others in order, and returns them.
func (q *pendingQueue) removeIf(drop func(*pendingPublish) bool) []*pendingPublish {
	var dropped []*pendingPublish
	kept := q.items[:q.head]
	for _, p := range q.items[q.head:] {
		if drop(p) {
			dropped = append(dropped, p)
		} else {
			kept = append(kept, p)
		}
	}
	clear(q.items[len(kept):])
	q.items = kept
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return dropped
}

// newConfirmChannel takes over ch, which must already be in confirm mode.
func newConfirmChannel(ch publishChannel, clock clock.Clock, timeout time.Duration, log *slog.Logger) *confirmChannel {
	c := &confirmChannel{
		ch:      ch,
		clock:   clock,
		timeout: timeout,
		log:     log,
		kick:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	c.waiters.New = func() any { return &pendingPublish{result: make(chan error, 1)} }
	returns := ch.NotifyReturn(make(chan amqp.Return, 64))
	closes := ch.NotifyClose(make(chan *amqp.Error, 1))
	go c.drain(returns, closes)
	return c
}

// wake kicks the settling goroutine, unless a kick is already waiting.
func (c *confirmChannel) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// drain settles pending publishes as their confirms come, and notes the
// channel's returns, until the return and close notification channels
// are both closed; then it fails the publishes still awaited.
func (c *confirmChannel) drain(returns <-chan amqp.Return, closes <-chan *amqp.Error) {
	defer close(c.done)
	var run []queued // the confirmed run being settled
	for returns != nil || closes != nil {
		var confirmed <-chan struct{}
		c.mu.Lock()
		if p := c.pending.front(); p != nil && p.confirm != nil {
			confirmed = p.confirm.Done()
		}
		c.mu.Unlock()
		select {
		case r, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			c.noteReturn(r)
		case <-confirmed:
			// The broker sends a basic.return before the ack of the same
			// message, and the connection's reader hands the return over
			// before it marks the confirm done: once the run of confirmed
			// publishes is known, a return for any of them is in returns.
			run = c.confirmedRun(run)
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
			run = c.settle(run)
		case <-c.kick:
		case e, ok := <-closes:
			if !ok {
				closes = nil
				continue
			}
			c.mu.Lock()
			c.closed = true
			c.closeErr = e
			c.mu.Unlock()
		}
	}
	// The channel is closed: every return is read, every confirm that came
	// before the close is marked already; the rest never come.
	c.settle(c.confirmedRun(run))
	c.failAll(ErrChannelClosed)
}

// noteReturn marks the oldest unconfirmed publish of the returned message.
func (c *confirmChannel) noteReturn(r amqp.Return) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pending.all() {
		if p.returned == nil && p.messageID == r.MessageId && p.key == r.RoutingKey {
			p.returned = &r
			return
		}
	}
	c.log.Debug("rabbitmq: basic.return for a message no longer awaited", "message_id", r.MessageId, "queue", r.RoutingKey, "reply", r.ReplyText)
}

// queued names a publish of the queue: the pending publish, and the
// number it was queued under, since a pending publish given up on may be
// recycled for another one.
type queued struct {
	p   *pendingPublish
	seq uint64
}

// confirmedRun appends to run the pending publishes, oldest first, whose
// confirm came, up to the first whose confirm has not, and returns it.
func (c *confirmChannel) confirmedRun(run []queued) []queued {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pending.all() {
		if p.confirm == nil || !isDone(p.confirm) {
			break
		}
		run = append(run, queued{p, p.seq})
	}
	return run
}

// settle reports the outcome of each publish of run, a confirmed run
// (confirmedRun), oldest first, except those given up on meanwhile, and
// returns run emptied.
func (c *confirmChannel) settle(run []queued) []queued {
	c.mu.Lock()
	n := 0
	for _, q := range run {
		if front := c.pending.front(); front == q.p && front.seq == q.seq {
			run[n] = q
			n++
			c.pending.pop()
		}
	}
	closed, closeErr := c.closed, c.closeErr
	c.mu.Unlock()
	for _, q := range run[:n] {
		p := q.p
		switch {
		case p.confirm.Acked() && p.returned != nil:
			p.finish(fmt.Errorf("%w (%d %s)", ErrUnroutable, p.returned.ReplyCode, p.returned.ReplyText))
		case p.confirm.Acked():
			p.finish(nil)
		case closed || c.ch.IsClosed():
			// A channel that closes marks the confirms still to come
			// done, not acked, as a nack does: once it is closed, a
			// message not acked is one whose confirm may never have
			// come.
			p.finish(channelClosedError(closeErr))
		default:
			p.finish(ErrNacked)
		}
	}
	clear(run)
	return run[:0]
}

// isDone reports whether dc's confirm came.
func isDone(dc deferredConfirm) bool {
	select {
	case <-dc.Done():
		return true
	default:
		return false
	}
}

// channelClosedError is ErrChannelClosed, with why the channel closed
// when the broker said.
func channelClosedError(closeErr error) error {
	if closeErr != nil {
		return fmt.Errorf("%w: %v", ErrChannelClosed, closeErr)
	}
	return ErrChannelClosed
}

// failAll fails every pending publish with err and refuses new ones.
func (c *confirmChannel) failAll(err error) {
	c.mu.Lock()
	c.closed = true
	if c.closeErr != nil {
		err = fmt.Errorf("%w: %v", err, c.closeErr)
	}
	failed := c.pending.removeIf(func(*pendingPublish) bool { return true })
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

// publishAsyncRoute is publishAsync through exchange with routing key
// key: a replayed dead letter's route.
func (c *confirmChannel) publishAsyncRoute(ctx context.Context, exchange, key string, msg amqp.Publishing, done func(error)) error {
	return c.start(ctx, &pendingPublish{messageID: msg.MessageId, exchange: exchange, key: key, mandatory: true, done: done}, msg)
}

// publishCopy is publishAsync for a retry copy or a dead letter, whose
// confirm wait does not time out while the broker blocks the connection
// (a memory or disk alarm): the broker holds the copy unread and lands it
// once the alarm clears, so failing it then would requeue its original
// while the copy is still on its way, and the message would run twice.
// Once the broker unblocks the connection, the wait has the whole timeout
// again. A shutdown bounds it: closing the connection fails the copies
// still awaited.
func (c *confirmChannel) publishCopy(ctx context.Context, queue string, msg amqp.Publishing, done func(error)) error {
	return c.start(ctx, &pendingPublish{messageID: msg.MessageId, key: queue, mandatory: true, hold: true, done: done}, msg)
}

// publishAsyncTo is publishAsync with p, unused but for its route
// (exchange, key, mandatory), as the pending publish, whose receiver gets
// the outcome.
func (c *confirmChannel) publishAsyncTo(ctx context.Context, msg amqp.Publishing, p *pendingPublish) error {
	p.messageID = msg.MessageId
	return c.start(ctx, p, msg)
}

// start sends msg for p and awaits its confirm from now on; the confirm
// timeout starts once the message is sent. On error p is awaited no more,
// and nothing refers to it. p is queued before it is sent, so that a
// return for it, which may come before the publish call returns, finds
// it.
func (c *confirmChannel) start(ctx context.Context, p *pendingPublish, msg amqp.Publishing) error {
	c.send.Lock()
	defer c.send.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrChannelClosed
	}
	c.queued++
	p.seq = c.queued
	c.pending.push(p)
	c.mu.Unlock()
	dc, err := c.ch.publishDeferred(ctx, p.exchange, p.key, p.mandatory, msg)
	c.mu.Lock()
	if c.pending.len() == 0 || c.pending.items[len(c.pending.items)-1] != p {
		// The channel closed meanwhile, and the settling goroutine took p
		// out and reported it.
		c.mu.Unlock()
		return nil
	}
	if err != nil {
		c.pending.items[len(c.pending.items)-1] = nil
		c.pending.items = c.pending.items[:len(c.pending.items)-1]
		if c.pending.head == len(c.pending.items) {
			c.pending.items, c.pending.head = c.pending.items[:0], 0
		}
		c.mu.Unlock()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if errors.Is(err, amqp.ErrClosed) {
			return fmt.Errorf("%w: %v", ErrChannelClosed, err)
		}
		return fmt.Errorf("send: %w", err)
	}
	p.confirm = dc
	p.deadline = c.clock.Now().Add(c.timeout)
	c.expireLaterLocked()
	oldest := c.pending.front() == p
	c.mu.Unlock()
	if oldest {
		c.wake()
	}
	return nil
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

// expire fails the publishes whose deadline has passed and whose confirm
// has not come, except copies while the broker blocks the connection
// (publishCopy), whose deadline moves a timeout on. One whose confirm
// came, behind one whose confirm has not, is settled once that one is.
func (c *confirmChannel) expire() {
	c.mu.Lock()
	c.expiry = nil
	now := c.clock.Now()
	held := c.held != nil && c.held()
	oldest := c.pending.front()
	expired := c.pending.removeIf(func(p *pendingPublish) bool {
		if p.deadline.IsZero() || now.Before(p.deadline) || isDone(p.confirm) {
			return false
		}
		if p.hold && held {
			p.deadline = now.Add(c.timeout)
			return false
		}
		return true
	})
	if c.pending.len() > 0 {
		c.expireLaterLocked()
	}
	moved := c.pending.front() != oldest
	c.mu.Unlock()
	if moved {
		c.wake()
	}
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
	oldest := c.pending.front() == p
	removed := c.pending.removeIf(func(q *pendingPublish) bool { return q == p })
	c.mu.Unlock()
	if oldest {
		c.wake()
	}
	return len(removed) > 0
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
