package rabbitmq

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime/adapter"
)

// raw is the AMQP delivery behind d.
func raw(d *adapter.Delivery) *amqp.Delivery { return d.Raw.(*amqp.Delivery) }

// Send publishes cp, a copy of d, through the hardened publish (mandatory,
// persistent, confirmed) and returns once it is sent, so the handler's
// slot is free while the broker confirms. While the broker blocks the
// publishing connection, the confirm wait does not time out (see
// confirmChannel.publishCopy). done gets the outcome off the
// confirm's goroutine (see reported). At most cap(r.copies) copies await
// their confirm: Send waits for a place first, or until ctx ends.
func (r *runner) Send(ctx context.Context, d *adapter.Delivery, cp *adapter.Copy, done func(error)) {
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
	confirmed := r.b.confirmReporter()
	sentAt := r.clock.Now()
	err := r.b.pub.publishCopy(ctx, cp.Queue, copyOf(d, cp, r.b.user), func(err error) {
		if confirmed != nil {
			confirmed(err)
		}
		if err == nil && r.waits != nil && cp.Kind == adapter.RetryCopy {
			r.waits.sent(cp.Queue, sentAt)
		}
		r.reported(done, err)
	})
	if err != nil {
		<-r.copies
		done(err) // in the handler's slot, which pauses before the requeue
	}
}

// reported hands a copy's outcome to its done. A confirmed copy's done
// runs at once, on the goroutine that read the confirm, as a raw client
// acks an original when its copy's confirm arrives: it acks the original
// through the channel's acker and records the verdict, and never pauses.
// A failed copy's done pauses before the requeue, so it gets a goroutine
// of its own: the confirms behind it are not held up, and when the
// publishing connection drops, every copy awaiting its confirm fails at
// once without their pauses adding up one after the other while their
// originals hold the prefetch window.
func (r *runner) reported(done func(error), err error) {
	if err != nil {
		go func() {
			done(err)
			<-r.copies
		}()
		return
	}
	done(nil)
	<-r.copies
}

// acksOf returns the acker of d's channel, or nil for a delivery the
// runner did not take in (a test's).
func acksOf(d *adapter.Delivery) *acker {
	if in, ok := d.Source.(*inbound); ok {
		return in.acks
	}
	return nil
}

// Ack acknowledges d on its channel, coalesced with the channel's other
// acks (see acker).
func (r *runner) Ack(_ context.Context, d *adapter.Delivery) error {
	if a := acksOf(d); a != nil {
		return a.ack(raw(d).DeliveryTag)
	}
	return raw(d).Ack(false)
}

// Reject nacks d without requeue, after the acks waiting on its channel.
func (r *runner) Reject(_ context.Context, d *adapter.Delivery) error {
	if a := acksOf(d); a != nil {
		return a.nack(raw(d).DeliveryTag, false)
	}
	return raw(d).Nack(false, false)
}

// Release nacks d with requeue, at once (acker.handBack): a basic.nack,
// which RabbitMQ 4.3 does not count toward a delivery limit, for a
// delivery shutdown hands back before any handler took it, or that the
// queue retries itself after its delay (the queue's own delayed retry,
// where it counts the nack in x-acquired-count).
func (r *runner) Release(_ context.Context, d *adapter.Delivery) error {
	if a := acksOf(d); a != nil {
		return a.handBack(raw(d).DeliveryTag)
	}
	return raw(d).Nack(false, true)
}

// Requeue rejects d with requeue, after the acks waiting on its channel:
// a basic.reject, which every RabbitMQ counts toward a quorum queue's
// delivery limit (4.3 no longer counts a basic.nack), so that a message
// requeued again and again is parked once it reaches the limit.
func (r *runner) Requeue(_ context.Context, d *adapter.Delivery) error {
	if a := acksOf(d); a != nil {
		return a.reject(raw(d).DeliveryTag, true)
	}
	return raw(d).Reject(true)
}
