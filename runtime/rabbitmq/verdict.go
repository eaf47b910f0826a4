package rabbitmq

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime/adapter"
)

// raw is the AMQP delivery behind d.
func raw(d *adapter.Delivery) *amqp.Delivery { return d.Raw.(*amqp.Delivery) }

// Send publishes cp, a copy of d, through the hardened publish: mandatory,
// persistent, confirmed.
func (r *runner) Send(ctx context.Context, d *adapter.Delivery, cp *adapter.Copy) error {
	return r.b.pub.publish(ctx, cp.Queue, copyOf(raw(d), cp, r.b.user))
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

// Requeue nacks d with requeue, after the acks waiting on its channel.
func (r *runner) Requeue(_ context.Context, d *adapter.Delivery) error {
	if a := acksOf(d); a != nil {
		return a.nack(raw(d).DeliveryTag, true)
	}
	return raw(d).Nack(false, true)
}
