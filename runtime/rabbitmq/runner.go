package rabbitmq

import (
	"cmp"
	"context"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/clock"
)

// runner runs one subscription. Each consuming session starts Workers()
// pumps per subscription; a pump takes a delivery from the session's
// consumer and runs it in one of the runner's Workers() handler slots. The
// slots outlive sessions, so a reconnect never runs more handlers at once
// than the subscription's concurrency; and the delivery goes from the
// client library to the handler with no goroutine in between.
//
// The runner is its Consumer's Transport: it sends the copies the Consumer
// builds and settles deliveries as the Consumer says.
type runner struct {
	b        *Broker
	c        *adapter.Consumer
	sub      *runtime.Subscription
	auto     bool
	prefetch int
	// slots holds a token per handler running, Workers() at most.
	slots chan struct{}
	// pumps are the pumps of every session, past and current.
	pumps sync.WaitGroup
	// copies holds a token per copy awaiting its confirm: as many as the
	// prefetch (or the handler slots, when more), since each holds its
	// original unacknowledged.
	copies chan struct{}
	// waits follows the retry copies through the wait queues; nil
	// without retries.
	waits *waitWatch
	clock clock.Clock

	// ackers are the ackers of the current session's channels of this
	// subscription (its queue's, its suspect queue's), for FlushAcks.
	mu     sync.Mutex
	ackers []*acker

	// retryOnce: how the subscription retries is chosen at its first
	// session (chooseRetry).
	retryOnce sync.Once
}

func newRunner(b *Broker, sub *runtime.Subscription, env runtime.Env) *runner {
	prefetch := sub.Prefetch
	if prefetch == 0 {
		prefetch = max(b.opts.prefetch, sub.Workers())
	}
	r := &runner{
		b: b, sub: sub,
		auto:     sub.AutoAck,
		prefetch: prefetch,
		slots:    make(chan struct{}, sub.Workers()),
		copies:   make(chan struct{}, max(prefetch, sub.Workers())),
	}
	env = env.Complete() // a runner a test makes may have none
	r.c = adapter.NewConsumer(sub, env, adapter.Rules{Kind: runtime.RabbitMQ}, r)
	r.clock = env.Clock
	if qs := adapter.WaitQueues(sub); len(qs) > 0 && !r.auto {
		r.waits = newWaitWatch(sub.Name, qs, b.opts.stallAfter, env.Logger)
	}
	return r
}

// startPumps starts the pumps of a session's consumer c: Workers() of
// them, or one for the suspect queue, whose deliveries run one at a time.
func (r *runner) startPumps(s *session, c *sessionConsumer) {
	if c.suspects {
		r.pumps.Go(func() { r.pumpSuspects(s, c) })
		return
	}
	for range r.sub.Workers() {
		r.pumps.Go(func() { r.pump(s, c) })
	}
}

// pumpOf runs c's deliveries with the pump its queue needs.
func (r *runner) pumpOf(s *session, c *sessionConsumer) {
	if c.suspects {
		r.pumpSuspects(s, c)
		return
	}
	r.pump(s, c)
}

// suspectQueue is the subscription's suspect queue, which the session
// consumes beside its queue; "" when it has none (ack=auto).
func (r *runner) suspectQueue() string { return r.c.SuspectQueue() }

// stopping is closed when deliveries must no longer start: when Shutdown
// begins (ack=manual: they go back to the broker), or when its deadline
// passes (ack=auto: the broker counts them as delivered already, so they
// run while there is time).
func (r *runner) stopping() <-chan struct{} {
	if r.auto {
		return r.b.handlerCtx.Done()
	}
	return r.b.stopping
}

func (r *runner) stopped() bool {
	select {
	case <-r.stopping():
		return true
	default:
		return false
	}
}

// waitCopies waits until the copies of every runner are confirmed (or
// not) and their originals settled, or ctx ends.
func waitCopies(ctx context.Context, runners []*runner) error {
	for _, r := range runners {
		if err := r.c.WaitCopies(ctx); err != nil {
			return err
		}
	}
	return nil
}

// waitPumps waits until the pumps of every session have returned: each
// returns once its consumer's deliveries end (the consumer was cancelled or
// the session closed) and its handler is done.
func (r *runner) waitPumps() {
	r.pumps.Wait()
}

// pump runs the deliveries of a session's consumer c until it ends, each
// in a handler slot. Once the session is lost, deliveries waiting for a
// slot are left alone (the broker requeues them with the channel). Once
// Shutdown begins, deliveries not yet started go back to the broker
// (ack=manual), or still run (ack=auto, where the broker already counts
// them as delivered).
func (r *runner) pump(s *session, c *sessionConsumer) {
	stopping := r.stopping()
	for d := range c.deliveries {
		select {
		case r.slots <- struct{}{}:
			// A free slot: the delivery is checked against stopping
			// below, once it holds the slot.
		default:
			if r.stopped() {
				r.release(c, &d)
				continue
			}
			select {
			case r.slots <- struct{}{}:
			case <-s.lost:
				continue
			case <-stopping:
				r.release(c, &d)
				continue
			}
		}
		if r.stopped() {
			r.release(c, &d)
		} else {
			r.handle(c, &d)
		}
		<-r.slots
	}
}

// pumpSuspects runs the deliveries of a session's consumer c of the
// suspect queue until it ends, one at a time. It takes no handler slot:
// the Consumer runs a suspect once no other handler of the subscription
// runs, and holds every other back meanwhile, so the subscription never
// runs more handlers at once than its concurrency; and a pump waiting for
// a slot that the other pumps keep taking could wait long. Once Shutdown
// begins, deliveries go back (see Consumer.Release).
func (r *runner) pumpSuspects(s *session, c *sessionConsumer) {
	for d := range c.deliveries {
		select {
		case <-s.lost:
			continue // the broker requeues it with the channel
		default:
		}
		if r.stopped() {
			r.release(c, &d)
		} else {
			r.handle(c, &d)
		}
	}
}

// release has the Consumer settle a delivery that was never started: it
// goes back to the broker with a nack with requeue (Release), or, with
// ack=auto, is lost; either way it is counted, observed and logged.
func (r *runner) release(c *sessionConsumer, d *amqp.Delivery) {
	in := &inbound{amqp: *d, acks: c.acks}
	fillDelivery(&in.d, &in.amqp, r.c)
	in.d.Source, in.d.Suspect = in, c.suspects
	r.c.Release(context.Background(), &in.d)
}

// inbound is a delivery on its way through the runner, in one allocation:
// the AMQP delivery, what the Consumer sees of it, and the acker of the
// channel it came on (nil with ack=auto).
type inbound struct {
	amqp amqp.Delivery
	d    adapter.Delivery
	acks *acker
}

// handle runs one delivery of c through the subscription's Consumer, which
// decides what becomes of it and has the runner carry that out.
func (r *runner) handle(c *sessionConsumer, d *amqp.Delivery) {
	if r.waits != nil {
		if q := cameBackFrom(d.Headers, r.c.IsWaitQueue); q != "" {
			r.waits.cameBack(q, r.clock.Now())
		}
	}
	in := &inbound{amqp: *d, acks: c.acks}
	fillDelivery(&in.d, &in.amqp, r.c)
	in.d.Source, in.d.Suspect = in, c.suspects
	r.c.Handle(r.b.handlerCtx, &in.d)
}

// useAckers makes acks the ackers of the subscription's channels in the
// current session.
func (r *runner) useAckers(acks []*acker) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ackers = acks
}

// FlushAcks sends the acks waiting on the subscription's channels of the
// current session (adapter.AckFlusher): the Consumer calls it around a
// suspect's run alone. An acker whose channel is gone has none to send;
// its error is the first returned.
func (r *runner) FlushAcks(context.Context) error {
	r.mu.Lock()
	acks := r.ackers
	r.mu.Unlock()
	var first error
	for _, a := range acks {
		if a == nil {
			continue
		}
		if err := a.flush(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// chooseRetry sets, once, how the subscription retries, now that its queue
// is declared on a broker of version v (lacksDelayedRetry: it exists
// without the delayed-retry arguments): through the queue's own delayed
// retry where adapter.BrokerRetry allows it and the queue has them, else
// through wait queues. It says which at startup when the subscription
// asked for the queue's own, or could have had it.
func (r *runner) chooseRetry(v serverVersion, lacksDelayedRetry bool) {
	r.retryOnce.Do(func() {
		delay, why := r.c.ChooseRetry(v.queues(), lacksDelayedRetry)
		log := r.c.Logger()
		switch {
		case delay > 0:
			log.Info("rabbitmq: retries wait in the subscription's quorum queue (RabbitMQ delayed retry): no copies, no wait queue", "delay", delay)
		case why != "" && (r.sub.Retry == runtime.RetryBroker || v.queues().DelayedRetry()):
			log.Info("rabbitmq: retries go through wait queues: "+why, "retry", cmp.Or(string(r.sub.Retry), "auto"))
		}
	})
}
