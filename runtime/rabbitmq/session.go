package rabbitmq

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/internal/messageid"
)

// session is one consuming connection: a channel and a consumer per
// subscription. It is lost when the connection or any of its channels
// closes, or when the broker cancels a consumer (its queue was deleted);
// the Broker then closes it and opens a new one.
type session struct {
	conn      *connection
	blocks    *blockState
	consumers []*sessionConsumer

	lost     chan struct{}
	lostOnce sync.Once
	mu       sync.Mutex
	lostErr  error

	closeOnce sync.Once
	watchers  sync.WaitGroup
}

// sessionConsumer is a subscription's consumer in a session, of its
// queue or of its suspect queue, on a channel of its own.
type sessionConsumer struct {
	runner *runner
	sess   *session
	ch     *amqp.Channel
	queue  string
	acks   *acker // settles the channel's deliveries; nil with ack=auto
	// suspects: the consumer of the subscription's suspect queue, whose
	// deliveries the Consumer runs alone, one at a time.
	suspects bool
	// prefetch is the consumer's prefetch once it runs at full speed.
	prefetch int

	mu sync.Mutex
	// feed is the broker's consumer on ch that the pumps read now: one
	// that takes a delivery at a time at first, for a subscription that
	// starts cautiously (see adapter.Consumer.CautiousStart), then one
	// with the full prefetch.
	feed *feed
	// stopped is set once the session stops consuming: no other feed
	// starts.
	stopped bool
}

// feed is one basic.consume on a sessionConsumer's channel. RabbitMQ
// applies a basic.qos to the consumers started after it, never to one
// already running, so a consumer's prefetch changes by starting another
// consumer (a feed) with the new one, then cancelling the first: the
// deliveries it holds stay on the channel and are settled there as
// before.
type feed struct {
	tag        string
	deliveries <-chan amqp.Delivery
	// cautious: the feed takes one delivery at a time, and makes way for
	// a full one at the first delivery that does not run alone.
	cautious bool
	// turning is set (under the sessionConsumer's lock) once the next
	// feed is being started; turned is closed once next is known (nil
	// when it could not start).
	turning bool
	turned  chan struct{}
	next    *feed
}

// openSession connects, declares the topology of every subscription and
// starts a consumer for each; deliveries reach the workers once the
// session is started.
func (b *Broker) openSession(ctx context.Context) (*session, error) {
	conn, err := b.dial(ctx, roleConsume)
	if err != nil {
		return nil, err
	}
	s := &session{conn: conn, blocks: b.blocks, lost: make(chan struct{})}
	s.watchErrors(conn.NotifyClose(make(chan *amqp.Error, 1)), "connection closed")
	b.blocks.watch(conn, roleConsume, &s.watchers, b.logger)
	subs := make([]*runtime.Subscription, len(b.runners))
	for i, r := range b.runners {
		subs[i] = r.sub
	}
	v := versionOf(conn.Properties)
	b.noteVersion(v, conn.addr)
	if err := declareTopology(conn, topology(subs), v, b.log); err != nil {
		_ = s.close(ctx)
		return nil, err
	}
	xs, err := exchanges(subs)
	if err == nil {
		err = declareExchanges(conn, xs)
	}
	if err != nil {
		_ = s.close(ctx)
		return nil, err
	}
	for _, r := range b.runners {
		c, err := s.consume(r, r.sub.Name, r.prefetch, false, r.c.CautiousStart())
		if err != nil {
			_ = s.close(ctx)
			return nil, err
		}
		s.consumers = append(s.consumers, c)
		ackers := []*acker{c.acks}
		if q := r.suspectQueue(); q != "" {
			// One suspect at a time: each runs alone, and one that the
			// worker holds while it waits to run would be counted with a
			// crash of the one running.
			sc, err := s.consume(r, q, 1, true, false)
			if err != nil {
				_ = s.close(ctx)
				return nil, err
			}
			s.consumers = append(s.consumers, sc)
			ackers = append(ackers, sc.acks)
		}
		r.useAckers(ackers)
	}
	return s, nil
}

// noteVersion logs the version of RabbitMQ the Broker reached at addr,
// once, and again whenever it changes (a rolling upgrade, another node).
func (b *Broker) noteVersion(v serverVersion, addr string) {
	if old := b.version.Swap(v.text); old != nil && old.(string) == v.text {
		return
	}
	b.logger().Info("rabbitmq: connected to RabbitMQ "+v.String(), "address", addr)
}

// consume opens a channel for r and starts a consumer of queue on it, r's
// queue or its suspect queue (suspects), with prefetch, or, cautious, with
// a prefetch of 1 until its first delivery that does not run alone.
func (s *session) consume(r *runner, queue string, prefetch int, suspects, cautious bool) (*sessionConsumer, error) {
	ch, err := s.conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: open channel for %q: %w", queue, err)
	}
	s.watchErrors(ch.NotifyClose(make(chan *amqp.Error, 1)), "channel of "+queue+" closed")
	cancels := ch.NotifyCancel(make(chan string, 1))
	s.watchers.Go(func() {
		for tag := range cancels {
			s.markLost(fmt.Errorf("rabbitmq: the broker cancelled consumer %s of queue %q (was the queue deleted?)", tag, queue))
		}
	})
	c := &sessionConsumer{runner: r, sess: s, ch: ch, queue: queue, suspects: suspects, prefetch: prefetch}
	first := prefetch
	if cautious {
		first = 1
	}
	if c.feed, err = c.start(first, cautious); err != nil {
		return nil, err
	}
	if !r.auto {
		c.acks = newAcker(ch, prefetch, r.c.Logger())
		c.acks.idle = r.b.opts.ackIdle
		c.acks.holdGaps = r.sub.BatchSize > 0 && !suspects
	}
	return c, nil
}

// start sets the channel's prefetch for the consumers to come and starts
// a feed with it.
func (c *sessionConsumer) start(prefetch int, cautious bool) (*feed, error) {
	r := c.runner
	if !r.auto {
		if err := c.ch.Qos(prefetch, 0, false); err != nil {
			return nil, fmt.Errorf("rabbitmq: set prefetch %d on %q: %w", prefetch, c.queue, err)
		}
	}
	tag := consumerTag(r.b.dialer.connectionName(), c.queue)
	deliveries, err := c.ch.Consume(c.queue, tag, r.auto, false, false, false, nil)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: consume %q: %w", c.queue, err)
	}
	return &feed{tag: tag, deliveries: deliveries, cautious: cautious, turned: make(chan struct{})}, nil
}

// current returns the feed the pumps read now.
func (c *sessionConsumer) current() *feed {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.feed
}

// after returns the feed that follows f, whose deliveries have ended:
// the full feed that took over from a cautious one (once it started), or
// nil when none follows (the consumer was cancelled, or the session
// lost).
func (c *sessionConsumer) after(f *feed) *feed {
	c.mu.Lock()
	turning := f.turning
	c.mu.Unlock()
	if !turning {
		return nil
	}
	<-f.turned
	return f.next
}

// widen makes way for a feed with the full prefetch, once the cautious
// feed f has delivered a message that does not run alone: it starts the
// new feed, then cancels f. The pumps read what f holds still, then the
// new feed. It does nothing once the session stops consuming, or when f
// is turning already.
func (c *sessionConsumer) widen(f *feed) {
	c.mu.Lock()
	if c.stopped || f.turning || c.feed != f {
		c.mu.Unlock()
		return
	}
	f.turning = true
	c.mu.Unlock()
	next, err := c.start(c.prefetch, false)
	c.mu.Lock()
	if err == nil {
		c.feed, f.next = next, next
	}
	stopped := c.stopped
	close(f.turned)
	c.mu.Unlock()
	if err != nil {
		c.sess.markLost(err)
		return
	}
	if stopped {
		// The session stopped consuming while the feed started: it
		// cancelled f; cancel this one too.
		_ = c.ch.Cancel(next.tag, false)
	}
	if err := c.ch.Cancel(f.tag, false); err != nil {
		c.sess.markLost(fmt.Errorf("rabbitmq: cancel the cautious consumer of %q: %w", c.queue, err))
	}
}

// stop marks the consumer stopped and returns the tag of its current
// feed, for basic.cancel.
func (c *sessionConsumer) stop() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	return c.feed.tag
}

// consumerTag names a consumer after the connection and the queue, as the
// broker's management tools show it.
func consumerTag(connection, queue string) string {
	tag := connection + "/" + queue + "/" + messageid.New()[:8]
	if len(tag) > 255 {
		tag = tag[len(tag)-255:]
	}
	return tag
}

// watchErrors drains a close notification channel; an error on it means
// the session is lost.
func (s *session) watchErrors(errs <-chan *amqp.Error, what string) {
	s.watchers.Go(func() {
		for e := range errs {
			if e != nil {
				s.markLost(fmt.Errorf("rabbitmq: %s: %w", what, e))
			}
		}
	})
}

func (s *session) markLost(err error) {
	s.lostOnce.Do(func() {
		s.mu.Lock()
		s.lostErr = err
		s.mu.Unlock()
		close(s.lost)
	})
}

// cause returns why the session was lost.
func (s *session) cause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostErr
}

// start starts the pumps that run the deliveries of every consumer.
func (s *session) start() {
	for _, c := range s.consumers {
		c.runner.startPumps(s, c)
	}
}

// cancelConsumers stops the broker from sending more deliveries. Those
// already received still reach the pumps, which hand them back; one more
// pump per consumer, held by no handler, hands them back while the
// handlers in flight finish.
func (s *session) cancelConsumers(log *slog.Logger) {
	for _, c := range s.consumers {
		if err := c.ch.Cancel(c.stop(), false); err != nil {
			log.Debug("rabbitmq: cancel consumer", "queue", c.queue, "err", err)
		}
		c.runner.pumps.Go(func() { c.runner.pumpOf(s, c) })
	}
}

// close sends the acks still waiting, then closes the connection, which
// requeues every delivery not yet acknowledged and ends the consumers'
// deliveries, and waits for the session's watchers. Its pumps return once their handlers are done; the
// runners wait for them. When ctx ends before the broker answered, the
// connection is dropped instead (the broker requeues the same), and close
// returns an error saying so.
func (s *session) close(ctx context.Context) error {
	var err error
	s.closeOnce.Do(func() {
		for _, c := range s.consumers {
			if c.acks != nil {
				_ = c.acks.flush() // a lost channel fails at once, and logs what it drops
			}
		}
		why := ""
		if !s.conn.closeWithin(ctx, func() { why = blockedBecause(s.blocks) }) {
			err = fmt.Errorf("the consuming connection did not close in time%s, so it was dropped; the broker requeues what it had not acknowledged", why)
		}
		for _, c := range s.consumers {
			if c.acks != nil {
				c.acks.close()
			}
		}
		s.watchers.Wait()
	})
	return err
}
