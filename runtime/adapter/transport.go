package adapter

import (
	"context"
	"errors"
)

// Transport is what a broker adapter does for its Consumer: send copies
// through its hardened publish. It decides nothing: the Consumer tells it
// what to send where, and what to do with the original afterwards.
type Transport interface {
	// Send publishes cp, a copy of d, to cp.Queue, built from d.Raw with
	// cp's header changes applied, and calls done once with the outcome:
	// nil once the broker took the copy (RabbitMQ: confirmed it), or the
	// error that stopped it, one that wraps ErrUnroutable when nothing
	// could take it.
	//
	// done may run before Send returns (a transport that sends
	// synchronously), or later from another goroutine (RabbitMQ: when the
	// confirm arrives), so that the handler's slot is free while the
	// broker confirms. In done the Consumer settles the original: done(nil)
	// acks it and records the verdict, and returns at once; done(err) may
	// block a while (the pause before a requeue), so a transport calls it
	// where that holds up no delivery and no other outcome. Send may block
	// while as many copies await their outcome as the transport allows,
	// which bounds them.
	Send(ctx context.Context, d *Delivery, cp *Copy, done func(error))
}

// Acknowledger is what a Transport of a broker with acknowledgements
// (RabbitMQ) also does: settle the original delivery as the Consumer says.
type Acknowledger interface {
	// Ack tells the broker the delivery is done.
	Ack(ctx context.Context, d *Delivery) error
	// Reject hands the delivery back without requeue (a broker-level
	// dead-letter exchange gets it).
	Reject(ctx context.Context, d *Delivery) error
	// Requeue hands the delivery back to be delivered again, counted as a
	// failed delivery where the broker counts them (RabbitMQ: toward a
	// quorum queue's delivery limit).
	Requeue(ctx context.Context, d *Delivery) error
	// Release hands the delivery back to be delivered again without
	// counting as failed where the broker can tell (RabbitMQ 4.3: a
	// basic.nack with requeue is not counted toward a delivery limit): a
	// delivery no handler took, at shutdown (see Consumer.Release), or a
	// retry on a queue that waits out its delay itself
	// (Consumer.UseBrokerRetry), which counts it apart from crashes.
	Release(ctx context.Context, d *Delivery) error
}

// AckFlusher is what an Acknowledger that holds acks back, to send many
// in one frame (RabbitMQ), also is: FlushAcks sends every ack it holds, of
// the subscription's deliveries, at once. The Consumer calls it before and
// after it runs a suspect alone, so that the messages handled before it
// are not delivered again should it crash the worker, and its own ack is
// not lost should the next one.
type AckFlusher interface {
	FlushAcks(ctx context.Context) error
}

// ErrUnroutable is what a Transport's Send wraps when the destination does
// not exist or cannot take the copy: trying again cannot help, so the
// original is rejected rather than requeued. Its text names no cause: the
// error that wraps it says where the message went, and why nothing took
// it there.
var ErrUnroutable = errors.New("unroutable: the broker returned it")
