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
	return r.b.publishConfirmed(ctx, cp.Queue, copyOf(raw(d), cp, r.b.user))
}

// Ack acknowledges d on its channel.
func (r *runner) Ack(_ context.Context, d *adapter.Delivery) error {
	return raw(d).Ack(false)
}

// Reject nacks d without requeue.
func (r *runner) Reject(_ context.Context, d *adapter.Delivery) error {
	return raw(d).Nack(false, false)
}

// Requeue nacks d with requeue.
func (r *runner) Requeue(_ context.Context, d *adapter.Delivery) error {
	return raw(d).Nack(false, true)
}
