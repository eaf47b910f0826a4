package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/deadletter"
)

// dlqConfirmTimeout is how long a replay or an import waits for the
// broker's confirm of one letter before it counts the letter as failed
// (the letter stays parked).
const dlqConfirmTimeout = time.Minute

// confirmed opens a channel in confirm mode for a replay or an import:
// the one confirmed publishing every part of this package uses.
func (q *DeadLetterQueue) confirmed() (*confirmChannel, error) {
	ch, err := q.channel()
	if err != nil {
		return nil, q.wrap("open a channel to publish on", err)
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, q.wrap("put the publishing channel in confirm mode", err)
	}
	return newConfirmChannel(amqpPublishChannel{ch}, clock.System{}, dlqConfirmTimeout, slog.New(slog.DiscardHandler)), nil
}

// replayed is the outcome of one letter's replay.
type replayed struct {
	tag uint64 // its delivery tag in the dead-letter queue
	id  string
	to  string
	err error
}

// Replay publishes each letter sel picks as a new delivery of the original
// message (see deadletter.Replayed), with publisher confirms and
// mandatory, and removes the letter from the queue once the broker
// confirmed its replay. A letter whose replay is returned (no queue is
// bound for it) or not confirmed stays in the queue and is counted in
// Report.Failed. A crash in the middle may leave a letter both replayed
// and still parked, never neither. When the connection is lost, Replay
// ends with an error that says so: the letters not yet confirmed are
// still parked, and running the replay again finishes the job.
//
// The letters are read as Scan reads them, by consumers of a bounded
// prefetch (see read): a slow replay (Rate, slow confirms) of every
// letter holds at most 512 letters read ahead of it; one that leaves
// letters in the queue, at most about 8 MiB of them (512 letters, when
// they are larger than 16 KiB).
func (q *DeadLetterQueue) Replay(ctx context.Context, sel deadletter.Selection, opts deadletter.ReplayOptions) (deadletter.Report, error) {
	var rep deadletter.Report
	window := opts.Window
	if window <= 0 {
		window = 256
	}
	var pub *confirmChannel
	if !opts.DryRun {
		if err := q.checkTarget(opts.To); err != nil {
			return rep, err
		}
		var err error
		if pub, err = q.confirmed(); err != nil {
			return rep, err
		}
		defer pub.close()
	}
	// Each outcome comes from the confirm channel's goroutine; at most
	// window are awaited, so sending one never blocks.
	outcomes := make(chan replayed, window)
	inflight := 0
	var lost error                    // why the publishing channel closed, once it did
	var remove func(tag uint64) error // removes a letter read, once its replay is confirmed
	settle := func(o replayed) error {
		inflight--
		switch {
		case o.err == nil:
			if err := remove(o.tag); err != nil {
				return q.wrap("remove a replayed letter", err)
			}
			rep.Done++
		case errors.Is(o.err, ErrUnroutable):
			rep.Fail("letter %s: returned unroutable: nothing takes it at %s (a queue deleted? replay with another target)", o.id, o.to)
		case errors.Is(o.err, ErrChannelClosed):
			lost = o.err
			rep.Fail("letter %s: the broker did not confirm its replay (%v)", o.id, o.err)
		default:
			rep.Fail("letter %s: the broker did not confirm its replay (%v)", o.id, o.err)
		}
		return nil
	}
	await := func() error {
		select {
		case o := <-outcomes:
			return settle(o)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	start := time.Now()
	err := q.visit(ctx, dlqHoldPatience, func(l *deadletter.Letter, tag uint64, ack func(uint64) error) error {
		remove = ack
		exchange, key, send := rep.Plan(sel, opts, l)
		if !send {
			return nil
		}
		if err := opts.Pace(ctx, start, rep.Selected); err != nil {
			return err
		}
		for inflight >= window || len(outcomes) > 0 {
			if err := await(); err != nil {
				return err
			}
		}
		if lost != nil {
			return lost
		}
		to := "queue " + key
		if exchange != "" {
			to = fmt.Sprintf("exchange %s with routing key %q", exchange, key)
		}
		o := replayed{tag: tag, id: l.MessageID(), to: to}
		if err := pub.publishAsyncRoute(ctx, exchange, key, letterPublishing(deadletter.Replayed(l)), func(err error) {
			o.err = err
			outcomes <- o
		}); err != nil {
			return err
		}
		inflight++
		return nil
	}, func(err error) error {
		for inflight > 0 {
			if werr := await(); werr != nil {
				return firstErr(err, werr)
			}
		}
		return firstErr(err, lost)
	})
	if err != nil && ctx.Err() == nil {
		err = fmt.Errorf("rabbitmq: dead-letter queue %s: the replay stopped after it replayed %s: %w: the letters not replayed are still parked; run the same replay again to finish it", q.name, deadletter.Letters(rep.Done), q.unnamed(err))
	}
	return rep, err
}

// checkTarget fails when the target queue or exchange does not exist.
func (q *DeadLetterQueue) checkTarget(t deadletter.Target) error {
	if t.Address != "" {
		return fmt.Errorf("rabbitmq: dead-letter queue %s: an address (%s) is a ZeroMQ target: replay to a queue or an exchange", q.name, t.Address)
	}
	ch, err := q.channel()
	if err != nil {
		return q.wrap("open a channel", err)
	}
	defer func() { _ = ch.Close() }()
	switch {
	case t.Exchange != "":
		err = ch.ExchangeDeclarePassive(t.Exchange, "direct", true, false, false, false, nil)
	case t.Queue != "":
		_, err = ch.QueueDeclarePassive(t.Queue, true, false, false, false, nil)
	}
	var aerr *amqp.Error
	if errors.As(err, &aerr) && aerr.Code == amqp.NotFound {
		return fmt.Errorf("rabbitmq: dead-letter queue %s: cannot replay to %s: it does not exist: declare it, or give another target: %w", q.name, t, err)
	}
	if err != nil {
		return fmt.Errorf("rabbitmq: dead-letter queue %s: cannot check the target %s: %w", q.name, t, err)
	}
	return nil
}

// Purge removes each letter sel picks from the queue (with dryRun, only
// counts them). The zero Selection purges every letter present when Purge
// starts; one parked meanwhile is kept.
func (q *DeadLetterQueue) Purge(ctx context.Context, sel deadletter.Selection, dryRun bool) (deadletter.Report, error) {
	var rep deadletter.Report
	err := q.visit(ctx, dlqHoldPatience, func(l *deadletter.Letter, tag uint64, ack func(uint64) error) error {
		if !rep.Pick(sel, l) {
			return nil
		}
		if !dryRun {
			if err := ack(tag); err != nil {
				return q.wrap("remove a letter", err)
			}
		}
		rep.Done++
		return nil
	}, nil)
	return rep, err
}

// Import publishes each letter of r (JSON Lines as Export writes them)
// into the queue as it was parked, headers and explanation included, with
// publisher confirms. It returns the number the broker confirmed. When it
// fails (a line that is not a letter, a lost connection), it says how many
// were imported: the letters after those may or may not be in the queue.
func (q *DeadLetterQueue) Import(ctx context.Context, r io.Reader) (int, error) {
	ch, err := q.channel()
	if err != nil {
		return 0, q.wrap("open a channel", err)
	}
	_, err = ch.QueueDeclarePassive(q.name, true, false, false, false, nil)
	_ = ch.Close()
	if err != nil {
		return 0, q.wrap("inspect the queue", err)
	}
	pub, err := q.confirmed()
	if err != nil {
		return 0, err
	}
	defer pub.close()
	const window = 256
	results := make(chan error, window)
	n, inflight, line := 0, 0, 0
	var failed error
	await := func() error {
		select {
		case err := <-results:
			inflight--
			if err != nil && failed == nil {
				failed = err
			}
			if err == nil {
				n++
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	err = deadletter.ReadLetters(r, func(l *deadletter.Letter) error {
		line++
		for inflight >= window || len(results) > 0 {
			if err := await(); err != nil {
				return err
			}
		}
		if failed != nil {
			return failed
		}
		if err := pub.publishAsync(ctx, q.name, letterPublishing(l), func(err error) { results <- err }); err != nil {
			return err
		}
		inflight++
		return nil
	})
	for inflight > 0 {
		if werr := await(); werr != nil {
			err = firstErr(err, werr)
			break
		}
	}
	err = firstErr(err, failed)
	if err != nil && ctx.Err() == nil {
		return n, fmt.Errorf("rabbitmq: dead-letter queue %s: import stopped after %s: %w: fix the cause and import the lines after those again", q.name, deadletter.Letters(n), q.unnamed(err))
	}
	return n, err
}
