package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/internal/wait"
)

// carryOut does what the verdict says with d. It sets v.Delay and v.Queue
// to the wait queue a retry copy went to. The error, for Consumer.Settle,
// says what was done instead when the verdict could not be carried out.
func (r *runner) carryOut(ctx context.Context, d *amqp.Delivery, v *runtime.Verdict) error {
	if r.auto {
		return r.carryOutAutoAck(ctx, d, v)
	}
	switch v.Kind {
	case runtime.VerdictAck, runtime.VerdictDrop:
		if err := d.Ack(false); err != nil {
			return fmt.Errorf("rabbitmq: ack failed: %w; the broker redelivers the message", err)
		}
		return nil
	case runtime.VerdictReject:
		if err := d.Nack(false, false); err != nil {
			return fmt.Errorf("rabbitmq: nack without requeue failed: %w; the broker redelivers the message", err)
		}
		return nil
	case runtime.VerdictRetry:
		wq := runtime.PickWaitQueue(r.waitQueues, v.Attempt, v.Delay)
		v.Delay, v.Queue = wq.TTL, wq.Name
		err := r.b.pub.publish(ctx, wq.Name, retryCopy(d, r.b.user, v.Attempt))
		return r.settlePublished(d, "wait queue", wq.Name, err)
	case runtime.VerdictPark:
		err := r.b.pub.publish(ctx, v.Queue, deadLetterCopy(d, r.b.user, r.sub.Name, *v, r.b.clock.Now()))
		return r.settlePublished(d, "dead-letter queue", v.Queue, err)
	}
	if err := d.Nack(false, true); err != nil {
		return fmt.Errorf("rabbitmq: unknown verdict %v; the nack failed too (%w), so the broker redelivers the message", v.Kind, err)
	}
	return fmt.Errorf("rabbitmq: unknown verdict %v; nacked with requeue", v.Kind)
}

// maxRequeuePause caps the pause before a delivery whose copy could not be
// published is requeued.
const maxRequeuePause = 5 * time.Second

// settlePublished is settlePublished for r's deliveries. Before requeueing
// a delivery whose copy failed to publish it pauses, growing with each
// failure in a row as the reconnect backoff does (up to maxRequeuePause):
// a broker that keeps refusing copies (a full dead-letter queue, say)
// would otherwise see the same delivery come back at once, again and
// again. The pause ends early when Shutdown begins.
func (r *runner) settlePublished(d *amqp.Delivery, what, queue string, err error) error {
	if err == nil {
		r.publishFailures.Store(0)
	} else if !errors.Is(err, ErrUnroutable) {
		n := r.publishFailures.Add(1)
		_ = wait.Sleep(r.b.runCtx, r.b.clock, min(r.b.opts.backoff.delay(int(min(n, 64))), maxRequeuePause))
	}
	return settlePublished(d, what, queue, err)
}

// settlePublished settles the original d once its copy was published to
// queue (err nil) or not: ack after a confirmed copy; nack without requeue
// when the copy was unroutable (a retry cannot fix that); nack with
// requeue after a transport failure, a broker nack or a missing confirm.
func settlePublished(d *amqp.Delivery, what, queue string, err error) error {
	if err == nil {
		if aerr := d.Ack(false); aerr != nil {
			return fmt.Errorf("rabbitmq: copy sent to %s %q but the ack of the original failed: %w; the broker redelivers it, so it may be handled twice", what, queue, aerr)
		}
		return nil
	}
	requeue := !errors.Is(err, ErrUnroutable)
	if nerr := d.Nack(false, requeue); nerr != nil {
		return fmt.Errorf("rabbitmq: publish to %s %q failed: %w; the consuming channel is gone too, so the broker redelivers the message", what, queue, err)
	}
	if !requeue {
		return fmt.Errorf("rabbitmq: %s %q unroutable; nacked without requeue: %w", what, queue, err)
	}
	return fmt.Errorf("rabbitmq: publish to %s %q failed: %w; nacked with requeue", what, queue, err)
}

// carryOutAutoAck is carryOut for ack=auto: the broker counted the message
// as delivered when it sent it, so nothing is acknowledged; only a dead
// letter copy is sent.
func (r *runner) carryOutAutoAck(ctx context.Context, d *amqp.Delivery, v *runtime.Verdict) error {
	switch v.Kind {
	case runtime.VerdictAck, runtime.VerdictDrop:
		return nil
	case runtime.VerdictPark:
		if err := r.b.pub.publish(ctx, v.Queue, deadLetterCopy(d, r.b.user, r.sub.Name, *v, r.b.clock.Now())); err != nil {
			return fmt.Errorf("rabbitmq: publish to dead-letter queue %q failed: %w; with ack=auto the message is lost", v.Queue, err)
		}
		return nil
	case runtime.VerdictReject:
		return errors.New("rabbitmq: ack=auto acknowledged the message on delivery, so it cannot be rejected: it is lost (add a dead_letter to keep such messages)")
	}
	return fmt.Errorf("rabbitmq: ack=auto cannot carry out a %v verdict: the message is lost", v.Kind)
}
