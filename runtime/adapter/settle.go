package adapter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/streamgen/streamgen/runtime/internal/wait"
	"github.com/streamgen/streamgen/runtime/observe"
)

// carryOut does what v says with d through the Transport, settles it, and
// returns the error it was settled with. A copy's original is settled once
// the Transport reports the copy's outcome (see sendCopy).
func (c *Consumer) carryOut(ctx context.Context, d *Delivery, v *Verdict) error {
	var err error
	switch v.Kind {
	case VerdictAck, VerdictDrop:
		err = c.ack(ctx, d)
	case VerdictReject:
		err = c.reject(ctx, d)
	case VerdictRetry:
		if v.ByBroker {
			if err = c.acks.Release(ctx, d); err != nil {
				err = fmt.Errorf("nack with requeue failed: %w; the broker delivers the message again", err)
			}
			break
		}
		cp := c.rules.retryCopy(d, v.Queue)
		c.observedHeaders(d, cp)
		if c.rules.delaysInMemory() && v.Delay > 0 {
			// The copy waits in memory: the retry is logged now, when it
			// is decided, and its sending after the delay at debug.
			verdict := *v
			if d.obs != nil {
				c.end(d, verdict, nil)
			}
			c.logRetry(slog.LevelInfo, "message will be retried", d, verdict)
			c.delayed.schedule(v.Delay,
				func() { c.sendLogged(ctx, d, cp, verdict, true) },
				func() { c.settle(d, verdict, ErrCopyLost, false) })
			return nil
		}
		return c.sendCopy(ctx, d, cp, *v)
	case VerdictPark:
		cp := c.rules.deadLetterCopy(d, c.sub.Name, *v, c.clock.Now())
		c.observedHeaders(d, cp)
		return c.sendCopy(ctx, d, cp, *v)
	case VerdictIsolate:
		cp := c.rules.suspectCopy(d, v.Queue, c.crashes(d))
		c.observedHeaders(d, cp)
		return c.sendCopy(ctx, d, cp, *v)
	default:
		err = fmt.Errorf("adapter: unknown verdict %v", v.Kind)
	}
	c.settle(d, *v, err, false)
	return err
}

// observedHeaders adds the headers d's observation sets to cp. It cannot
// set the runtime's own: the retry count, and x-streamgen-* headers.
func (c *Consumer) observedHeaders(d *Delivery, cp *Copy) {
	if d.obs == nil {
		return
	}
	d.obs.CopyHeaders(func(name, value string) {
		const ours = "x-streamgen-"
		if name == "" || strings.EqualFold(name, c.countHeader) ||
			len(name) >= len(ours) && strings.EqualFold(name[:len(ours)], ours) {
			return
		}
		cp.set(c.rules.headerName(name), c.rules.headerValue(value))
	})
}

// end tells d's observation how d ended; it is told once.
func (c *Consumer) end(d *Delivery, v Verdict, err error) {
	obs := d.obs
	d.obs = nil
	obs.End(observe.Settlement{
		Verdict: v.Kind.String(), MessageType: v.MessageType, Attempt: v.Attempt, MaxAttempts: v.MaxAttempts,
		Reason: v.Reason, Poison: v.Poison, Queue: v.Queue, Delay: v.Delay, Duplicate: v.Duplicate,
		Handled: obs.handled, HandlerDuration: obs.took, Err: err,
	})
}

// ack acknowledges d where the broker can.
func (c *Consumer) ack(ctx context.Context, d *Delivery) error {
	switch {
	case c.acks == nil:
		if !c.ackWarned.Load() && c.ackWarned.CompareAndSwap(false, true) {
			// Documented behaviour, not a fault: said once, at info.
			c.log.Info("ZeroMQ cannot acknowledge a message; acks do nothing (logged once per subscription)")
		}
		return nil
	case c.auto:
		return nil // the broker counted it as delivered when it sent it
	}
	if err := c.acks.Ack(ctx, d); err != nil {
		return fmt.Errorf("ack failed: %w; the broker delivers the message again", err)
	}
	return nil
}

// reject hands d back without requeue where the broker can.
func (c *Consumer) reject(ctx context.Context, d *Delivery) error {
	switch {
	case c.acks == nil:
		if !c.rejectWarned.Load() && c.rejectWarned.CompareAndSwap(false, true) {
			c.log.Warn("ZeroMQ cannot hand a message back to a broker; rejected messages are dropped (logged once per subscription)")
		}
		return nil
	case c.auto:
		return errors.New("ack=auto acknowledged the message on delivery, so it cannot be rejected: it is lost (add a dead_letter to keep such messages)")
	}
	if err := c.acks.Reject(ctx, d); err != nil {
		return fmt.Errorf("nack without requeue failed: %w; the broker delivers the message again", err)
	}
	return nil
}

// sendCopy sends cp, and once the Transport reports its outcome settles
// the original d (settleCopy) and records v. It returns the error d was
// settled with when the outcome came before Send returned, else nil: d is
// settled later, without holding the handler's slot.
func (c *Consumer) sendCopy(ctx context.Context, d *Delivery, cp *Copy, v Verdict) error {
	return c.sendLogged(ctx, d, cp, v, false)
}

// sendLogged is sendCopy; logged says that the retry v was logged when it was
// decided, so that its sending is logged at debug only.
func (c *Consumer) sendLogged(ctx context.Context, d *Delivery, cp *Copy, v Verdict, logged bool) error {
	s := &sending{c: c, ctx: ctx, d: d, cp: cp, v: v, logged: logged}
	c.copies.Add(1)
	c.unsent.add()
	c.send.Send(ctx, d, cp, s.done)
	if s.state.CompareAndSwap(copySending, copyReturned) {
		return nil // settled later, by done
	}
	return s.err
}

// sending is a copy whose outcome the Transport has yet to report.
type sending struct {
	c   *Consumer
	ctx context.Context
	d   *Delivery
	cp  *Copy
	v   Verdict
	// logged: the retry was logged when it was decided.
	logged bool
	// state tells whether Send returned or done ran first; err, written
	// by done before state, is what the original was settled with.
	state  atomic.Int32
	called atomic.Bool
	err    error
}

// done is the outcome the Transport reports: it settles the original and
// records the verdict. A second call is a Transport's bug, and ignored.
func (s *sending) done(err error) {
	if s.called.Swap(true) {
		return
	}
	s.err = s.c.settleCopy(s.ctx, s.d, s.cp, err)
	s.c.settle(s.d, s.v, s.err, s.logged)
	s.state.CompareAndSwap(copySending, copySettled)
	s.c.unsent.done()
	s.c.copies.Done()
}

// settleCopy settles the original d once its copy cp was sent (err nil)
// or not, and returns the error d was settled with: ack after a sent copy;
// reject when the copy was unroutable (trying again cannot fix that);
// requeue after any other failure, following a pause that grows with each
// failure in a row, so that a broker that keeps refusing copies (a full
// dead-letter queue, say) does not see the same delivery come back at
// once, again and again.
func (c *Consumer) settleCopy(ctx context.Context, d *Delivery, cp *Copy, err error) error {
	if err == nil {
		c.sendFailures.Store(0)
		if c.acks == nil || c.auto {
			return nil
		}
		if aerr := c.acks.Ack(ctx, d); aerr != nil {
			return fmt.Errorf("%s sent, but the ack of the original failed: %w; the broker delivers it again, so it may be handled twice", copyWhat(cp), aerr)
		}
		return nil
	}
	what := copyWhat(cp)
	switch {
	case c.acks == nil:
		return fmt.Errorf("%s failed: %w; ZeroMQ cannot take the message back, so it is lost", what, err)
	case c.auto:
		return fmt.Errorf("%s failed: %w; with ack=auto the message is lost", what, err)
	case errors.Is(err, ErrUnroutable):
		if rerr := c.acks.Reject(ctx, d); rerr != nil {
			return fmt.Errorf("%s unroutable: %w; the nack failed too (%v), so the broker delivers the message again", what, err, rerr)
		}
		return fmt.Errorf("%s unroutable; nacked without requeue: %w: there is no queue %q", what, err, cp.Queue)
	}
	n := c.sendFailures.Add(1)
	c.pause(requeuePause(n))
	if rerr := c.acks.Requeue(ctx, d); rerr != nil {
		return fmt.Errorf("%s failed: %w; the consuming channel is gone too, so the broker delivers the message again", what, err)
	}
	return fmt.Errorf("%s failed: %w; nacked with requeue", what, err)
}

// copyWhat names cp for an error.
func copyWhat(cp *Copy) string { return fmt.Sprintf("%s to %q", cp.Kind, cp.Queue) }

// requeuePause is the pause before requeueing after n failed copies in a
// row: 50ms, doubling, up to maxRequeuePause.
func requeuePause(n int64) time.Duration {
	if n <= 0 {
		return 0
	}
	d := 50 * time.Millisecond << min(n-1, 16)
	return min(d, maxRequeuePause)
}

// pause waits d on the clock, or until Stop.
func (c *Consumer) pause(d time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	_ = wait.Sleep(ctx, c.clock, d)
}

// settle records what became of d: err is nil when the verdict was carried
// out, else the error that stopped it, saying what was done instead. It
// logs every retry, park, reject and drop with the subscription, message
// id and reason, and counts it. logged says that v, a retry, was logged
// when it was decided: a copy sent once its delay passed is then logged at
// debug.
func (c *Consumer) settle(d *Delivery, v Verdict, err error, logged bool) {
	if d.obs != nil {
		c.end(d, v, err)
	}
	if err != nil {
		c.metrics.Failed.Add(1)
		c.logSettled(slog.LevelError, "could not "+v.Kind.String()+" the message", d, v, "reason", v.Reason, "err", err)
		return
	}
	switch v.Kind {
	case VerdictAck:
		c.metrics.Acked.Add(1)
		if v.Duplicate {
			c.metrics.Duplicates.Add(1)
			c.logSettled(slog.LevelInfo, "duplicate message acknowledged without calling its handler: the inbox recorded it as handled, and its transaction committed, on an earlier delivery", d, v)
			return
		}
		c.logSettled(slog.LevelDebug, "message handled", d, v)
	case VerdictRetry:
		c.metrics.Retried.Add(1)
		if logged {
			c.logRetry(slog.LevelDebug, "retry copy sent after its delay", d, v)
		} else {
			c.logRetry(slog.LevelInfo, "message will be retried", d, v)
		}
	case VerdictPark:
		c.metrics.Parked.Add(1)
		c.logSettled(slog.LevelWarn, "message parked", d, v, "dead_letter", v.Queue, "poison", v.Poison, "reason", v.Reason)
	case VerdictReject:
		c.metrics.Rejected.Add(1)
		c.logSettled(slog.LevelWarn, "message rejected without requeue", d, v, "poison", v.Poison, "reason", v.Reason)
	case VerdictDrop:
		c.metrics.Dropped.Add(1)
		c.logSettled(slog.LevelWarn, "message dropped", d, v, "reason", v.Reason)
	case VerdictRelease:
		c.metrics.Released.Add(1)
		c.logSettled(slog.LevelInfo, "message handed back at shutdown", d, v)
	case VerdictIsolate:
		// Handed back to be delivered again, as a release is.
		c.metrics.Released.Add(1)
		c.logSettled(slog.LevelInfo, "message set aside to be handled alone", d, v, "suspect_queue", v.Queue, "reason", v.Reason)
	}
}

// logRetry logs msg about d and v, a retry, at level.
func (c *Consumer) logRetry(level slog.Level, msg string, d *Delivery, v Verdict) {
	via := v.Queue
	if v.ByBroker {
		via = "the queue's delayed retry"
	}
	c.logSettled(level, msg, d, v, "delay", v.Delay, "via", via, "reason", v.Reason)
}

// logSettled logs msg about d and v at level, followed by extra attributes.
// Nothing is built when the level is off, so an acknowledged message costs
// no allocation unless debug logging is on.
func (c *Consumer) logSettled(level slog.Level, msg string, d *Delivery, v Verdict, extra ...any) {
	ctx := context.Background()
	if !c.log.Enabled(ctx, level) {
		return
	}
	suppressed := 0
	if v.Poison {
		ok, n := c.poisonLogs.allow(c.clock.Now())
		if !ok {
			return
		}
		suppressed = n
	}
	attrs := make([]any, 0, 8+len(extra))
	attrs = append(attrs, "message_id", d.MessageID)
	if v.MessageType != "" {
		attrs = append(attrs, "message_type", v.MessageType)
	}
	if v.Attempt > 0 { // 0: a malformed message, never counted
		attrs = append(attrs, "attempt", v.Attempt, "max_attempts", v.MaxAttempts)
	}
	if suppressed > 0 {
		attrs = append(attrs, "poison_lines_left_out", suppressed)
	}
	c.log.Log(ctx, level, msg, append(attrs, extra...)...)
}
