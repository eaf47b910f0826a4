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
	runner     *runner
	ch         *amqp.Channel
	queue      string
	tag        string
	deliveries <-chan amqp.Delivery
	acks       *acker // settles the channel's deliveries; nil with ack=auto
	// suspects: the consumer of the subscription's suspect queue, whose
	// deliveries the Consumer runs alone, one at a time.
	suspects bool
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
	lacksDelayedRetry, err := declareTopology(conn, subs, v, b.log)
	if err != nil {
		_ = s.close(ctx)
		return nil, err
	}
	for _, r := range b.runners {
		r.chooseRetry(v, lacksDelayedRetry[r.sub.Name])
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
		c, err := s.consume(r, r.sub.Name, r.prefetch, false)
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
			sc, err := s.consume(r, q, 1, true)
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

// consume opens a channel for r, sets its prefetch and starts a consumer
// of queue on it: r's queue, or its suspect queue (suspects).
func (s *session) consume(r *runner, queue string, prefetch int, suspects bool) (*sessionConsumer, error) {
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
	if !r.auto {
		if err := ch.Qos(prefetch, 0, false); err != nil {
			return nil, fmt.Errorf("rabbitmq: set prefetch %d on %q: %w", prefetch, queue, err)
		}
	}
	tag := consumerTag(r.b.dialer.connectionName(), queue)
	deliveries, err := ch.Consume(queue, tag, r.auto, false, false, false, nil)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: consume %q: %w", queue, err)
	}
	c := &sessionConsumer{runner: r, ch: ch, queue: queue, tag: tag, deliveries: deliveries, suspects: suspects}
	if !r.auto {
		c.acks = newAcker(ch, prefetch, r.c.Logger())
		c.acks.idle = r.b.opts.ackIdle
		c.acks.holdGaps = r.sub.BatchSize > 0 && !suspects
	}
	return c, nil
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
		if err := c.ch.Cancel(c.tag, false); err != nil {
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
