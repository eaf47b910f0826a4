package rabbitmq

import (
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

// startPumps starts the pumps of a session's consumer c.
func (r *runner) startPumps(s *session, c *sessionConsumer) {
	for range r.sub.Workers() {
		r.pumps.Go(func() { r.pump(s, c) })
	}
}

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

// release has the Consumer settle a delivery that was never started: it
// goes back to the broker with a nack with requeue (Release), or, with
// ack=auto, is lost; either way it is counted, observed and logged.
func (r *runner) release(c *sessionConsumer, d *amqp.Delivery) {
	in := &inbound{amqp: *d, acks: c.acks}
	fillDelivery(&in.d, &in.amqp, r.c)
	in.d.Source = in
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
	in.d.Source = in
	if in.d.Returned > 0 && c.acks != nil {
		// It was held when a worker crashed or lost its connection, and
		// may be why: send the acks waiting, so that should it crash this
		// worker too, the messages handled before it are not delivered
		// again and counted toward the delivery limit with it.
		_ = c.acks.flush()
	}
	r.c.Handle(r.b.handlerCtx, &in.d)
}
