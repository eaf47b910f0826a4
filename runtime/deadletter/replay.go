package deadletter

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Target is where Replay publishes. The zero Target is each letter's
// source queue (its x-streamgen-source, or the queue the broker
// dead-lettered it from).
type Target struct {
	// Queue, when set, is a queue to publish every letter to (through the
	// default exchange).
	Queue string
	// Exchange, when set, is an exchange to publish every letter to with
	// RoutingKey.
	Exchange   string
	RoutingKey string
	// Address is, for a ZeroMQ keeper's Dir, where to push the letters
	// (tcp://host:port): the address the source queue is bound at. Each
	// letter is framed with its source queue, or Queue when set.
	Address string
}

// String says where t publishes.
func (t Target) String() string {
	switch {
	case t.Address != "" && t.Queue != "":
		return fmt.Sprintf("queue %s at %s", t.Queue, t.Address)
	case t.Address != "":
		return "each letter's source queue at " + t.Address
	case t.Exchange != "":
		return fmt.Sprintf("exchange %s with routing key %q", t.Exchange, t.RoutingKey)
	case t.Queue != "":
		return "queue " + t.Queue
	}
	return "each letter's source queue"
}

// route returns the exchange and routing key of l's replay, or ok false
// when l has no source to go back to.
func (t Target) route(l *Letter) (exchange, key string, ok bool) {
	switch {
	case t.Exchange != "":
		return t.Exchange, t.RoutingKey, true
	case t.Queue != "":
		return "", t.Queue, true
	}
	return "", l.Source, l.Source != ""
}

// ReplayOptions tune Replay.
type ReplayOptions struct {
	// To is where the letters go; the zero Target is their source.
	To Target
	// Rate, when above 0, is the most letters published per second.
	Rate float64
	// DryRun reports what would be replayed and changes nothing.
	DryRun bool
	// Window is the most publishes awaiting their confirm (default 256).
	Window int
}

// Report says what an operation did.
type Report struct {
	// Scanned is the number of letters read, Selected of those picked.
	Scanned, Selected int
	// Done is the number replayed (confirmed by the broker) or purged;
	// with DryRun, the number that would be.
	Done int
	// Failed is the number picked and left in the queue, and Errors says
	// why (the first few).
	Failed int
	Errors []string
}

func (r *Report) fail(format string, args ...any) {
	r.Failed++
	if len(r.Errors) < 10 {
		r.Errors = append(r.Errors, fmt.Sprintf(format, args...))
	}
}

// pending is a replay awaiting its confirm.
type pending struct {
	tag     uint64
	confirm *amqp.DeferredConfirmation
	key     string // message id and routing key, to match a basic.return
	id      string
	to      string // where it went, for an error
}

// Replay publishes each letter sel picks as a new delivery of the original
// message (see Replayed), with publisher confirms and mandatory, and
// removes the letter from the queue once the broker confirmed its replay.
// A letter whose replay is returned (no queue is bound for it) or not
// confirmed stays in the queue and is counted in Report.Failed. A crash in
// the middle may leave a letter both replayed and still parked, never
// neither. The letters are read as Scan reads them, by consumers of a
// bounded prefetch (see read): a slow replay (Rate, slow confirms) of
// every letter holds at most 512 letters read ahead of it; one that
// leaves letters in the queue, at most about 8 MiB of them (512 letters,
// when they are larger than 16 KiB).
func (q *Queue) Replay(ctx context.Context, sel Selection, opts ReplayOptions) (Report, error) {
	var rep Report
	window := opts.Window
	if window <= 0 {
		window = 256
	}
	var pub *amqp.Channel
	returns := make(chan amqp.Return, window+1)
	closes := make(chan *amqp.Error, 1)
	if !opts.DryRun {
		var err error
		if pub, err = q.channel(); err != nil {
			return rep, q.wrap("open a channel to publish on", err)
		}
		defer func() { _ = pub.Close() }()
		if err := pub.Confirm(false); err != nil {
			return rep, q.wrap("put the publishing channel in confirm mode", err)
		}
		pub.NotifyReturn(returns)
		pub.NotifyClose(closes)
		if err := q.checkTarget(opts.To); err != nil {
			return rep, err
		}
	}
	returned := map[string]int{}
	var inflight []pending
	var remove func(tag uint64) error // removes a letter read, once its replay is confirmed
	// settle waits for the oldest replay's confirm and acks its letter.
	settle := func() error {
		p := inflight[0]
		inflight = inflight[1:]
		acked, err := p.confirm.WaitContext(ctx)
		if err != nil && ctx.Err() != nil {
			return err
		}
		// A basic.return comes before the confirm of its publish, and the
		// client hands both on in order: it is in returns by now.
		for drained := false; !drained; {
			select {
			case r := <-returns:
				returned[r.MessageId+"\x00"+r.RoutingKey]++
			default:
				drained = true
			}
		}
		switch {
		case returned[p.key] > 0:
			returned[p.key]--
			rep.fail("letter %s: returned unroutable: nothing takes it at %s (a queue deleted? replay with another target)", p.id, p.to)
		case !acked:
			rep.fail("letter %s: the broker did not confirm its replay (%v)", p.id, closeReason(closes))
		default:
			if err := remove(p.tag); err != nil {
				return q.wrap("remove a replayed letter", err)
			}
			rep.Done++
		}
		return nil
	}
	start := time.Now()
	err := q.visit(ctx, holdPatience, func(l *Letter, tag uint64, ack func(uint64) error) error {
		remove = ack
		rep.Scanned++
		if !sel.Matches(l) || sel.Limit > 0 && rep.Selected >= sel.Limit {
			return nil
		}
		rep.Selected++
		exchange, key, ok := opts.To.route(l)
		if !ok {
			rep.fail("letter %s: no source queue to replay to: give a target queue", l.MessageID())
			return nil
		}
		if opts.DryRun {
			rep.Done++
			return nil
		}
		if opts.Rate > 0 {
			due := start.Add(time.Duration(float64(rep.Selected-1) / opts.Rate * float64(time.Second)))
			if err := sleep(ctx, time.Until(due)); err != nil {
				return err
			}
		}
		dc, err := pub.PublishWithDeferredConfirm(exchange, key, true, false, Replayed(l))
		if err != nil {
			return fmt.Errorf("deadletter: queue %s: cannot replay to %s: %v: %w", q.name, opts.To, closeReason(closes), err)
		}
		to := "queue " + key
		if exchange != "" {
			to = fmt.Sprintf("exchange %s with routing key %q", exchange, key)
		}
		inflight = append(inflight, pending{tag: tag, confirm: dc, key: l.MessageID() + "\x00" + key, id: l.MessageID(), to: to})
		if len(inflight) >= window {
			return settle()
		}
		return nil
	}, func(err error) error {
		for len(inflight) > 0 && ctx.Err() == nil {
			if serr := settle(); serr != nil {
				return firstErr(err, serr)
			}
		}
		return err
	})
	return rep, err
}

// checkTarget fails when the target queue or exchange does not exist.
func (q *Queue) checkTarget(t Target) error {
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
		return fmt.Errorf("deadletter: queue %s: cannot replay to %s: it does not exist: declare it, or give another target: %w", q.name, t, err)
	}
	if err != nil {
		return fmt.Errorf("deadletter: queue %s: cannot check the target %s: %w", q.name, t, err)
	}
	return nil
}

// closeReason says why the publishing channel closed, if it did.
func closeReason(closes <-chan *amqp.Error) string {
	select {
	case e, ok := <-closes:
		if ok && e != nil {
			return "channel closed: " + e.Error()
		}
		return "channel closed"
	default:
		return "no confirm"
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Purge removes each letter sel picks from the queue (with DryRun, only
// counts them). The zero Selection purges every letter present when Purge
// starts; one parked meanwhile is kept.
func (q *Queue) Purge(ctx context.Context, sel Selection, dryRun bool) (Report, error) {
	var rep Report
	err := q.visit(ctx, holdPatience, func(l *Letter, tag uint64, ack func(uint64) error) error {
		rep.Scanned++
		if !sel.Matches(l) || sel.Limit > 0 && rep.Selected >= sel.Limit {
			return nil
		}
		rep.Selected++
		if dryRun {
			rep.Done++
			return nil
		}
		if err := ack(tag); err != nil {
			return q.wrap("remove a letter", err)
		}
		rep.Done++
		return nil
	}, nil)
	return rep, err
}
