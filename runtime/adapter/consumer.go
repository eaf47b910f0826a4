package adapter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/internal/counters"
	"github.com/streamgen/streamgen/runtime/internal/retrycount"
	"github.com/streamgen/streamgen/runtime/internal/wait"
	"github.com/streamgen/streamgen/runtime/observe"
)

// Errors a Consumer settles deliveries with.
var (
	// ErrCopyLost: the broker stopped before a ZeroMQ retry copy's delay
	// ended; ZeroMQ stores nothing, so the copy is lost.
	ErrCopyLost = errors.New("adapter: the broker stopped before the retry delay ended; ZeroMQ stores nothing, so the copy is lost")
	// ErrLeftToBroker: the shutdown deadline passed while the handler ran;
	// the delivery is not settled, so the broker delivers it again.
	ErrLeftToBroker = errors.New("adapter: the shutdown deadline passed while the handler ran; the delivery is left to the broker, which delivers it again")
	// ErrNotHandled: the shutdown deadline passed before the message
	// reached a handler, on a broker that cannot take it back.
	ErrNotHandled = errors.New("adapter: the shutdown deadline passed before a handler took the message; ZeroMQ cannot take it back, so it is lost")
	// errLostUnstarted: shutdown began before a handler took a message
	// the broker counted as delivered when it sent it (ack=auto).
	errLostUnstarted = errors.New("adapter: shutdown began before a handler took the message; ack=auto had acknowledged it, so it is lost")
)

// maxRequeuePause caps the pause before a delivery whose copy could not be
// sent is requeued.
const maxRequeuePause = 5 * time.Second

// Consumer runs one subscription on one broker: for each delivery the
// adapter hands to Handle it computes the attempt number, decodes the body,
// picks and calls the handler (recovering a panic), applies the policy, and
// carries out the verdict through the adapter's Transport, building every
// copy itself. The same rules therefore hold on every broker, and in the
// in-memory harness.
type Consumer struct {
	sub   *runtime.Subscription
	rules Rules
	// countHeader is the retry count header as the broker writes it,
	// worked out once: every delivery reads it.
	countHeader string
	codec       runtime.Codec
	clock       clock.Clock
	log         *slog.Logger
	metrics     *counters.Subscription
	send        Transport
	acks        Acknowledger // nil on a broker without acknowledgements
	auto        bool         // ack=auto
	waitQueues  []WaitQueue
	isWait      map[string]bool
	// brokerDelay is how long the subscription's queue holds a message
	// handed back to be retried (UseBrokerRetry); 0: retries are copies.
	brokerDelay time.Duration
	delayed     *delayedCopies
	// crashLimit is how many times a message may come back unsettled
	// before it is parked (runtime.Subscription.CrashLimit), 0 where
	// nothing comes back (ZeroMQ, ack=auto); suspectQueue is where the
	// messages that come back are set aside, each to be handled alone;
	// quorum reports a quorum queue, whose broker counts the returns.
	crashLimit   int
	quorum       bool
	suspectQueue string
	// alone keeps a suspect's handler the only one running: a suspect
	// holds it, every other delivery shares it (see Handle). Only with a
	// crashLimit.
	alone sync.RWMutex
	// flusher sends the acks the transport holds back, or nil.
	flusher AckFlusher
	// queueDeadLetters reports a RabbitMQ queue that dead-letters what it
	// rejects into the subscription's dead-letter queue.
	queueDeadLetters bool
	// chains holds, per handler, its call wrapped in the middleware; nil
	// when there is no middleware, and the handler is called directly.
	chains []runtime.Next
	// obs is the App's Observer, nil without one; obsStop ends its watch.
	obs     observe.Observer
	obsStop func()
	// batches gathers the deliveries of a batch subscription; nil for
	// one message per call.
	batches *batcher
	// replies: a handler of the subscription answers requests (see
	// answer).
	replies bool

	// codecs are the codecs each handler reads (runtime.Handler.Codecs),
	// by index; every is the index of the handler of every message type,
	// -1 when there is none.
	codecs [][]runtime.Codec
	every  int

	stopping chan struct{} // closed by Stop
	stopOnce sync.Once
	// draining is closed by Drain (and Stop): batches no longer wait.
	draining  chan struct{}
	drainOnce sync.Once
	// sendFailures counts copies in a row that could not be sent.
	sendFailures atomic.Int64
	// copies counts the copies whose outcome the transport has yet to
	// report; unsent counts them too, for a suspect to wait on while
	// others may start (a WaitGroup must not be waited on then).
	copies     sync.WaitGroup
	unsent     copyCount
	poisonLogs logLimiter

	// ackWarned and rejectWarned are set once the warnings that this
	// broker cannot ack or reject are logged: every delivery on ZeroMQ
	// checks the first, and a flag costs less than a look-up in once.
	ackWarned, rejectWarned atomic.Bool
}

// NewConsumer returns the Consumer of sub on a broker that follows rules,
// sending copies through tr. On a broker with acknowledgements (RabbitMQ)
// tr must also be an Acknowledger. env is what the App handed the broker's
// Start; its zero fields get their defaults (runtime.Env.Complete). The
// handlers are called
// through env.Middleware and then sub.Middleware, chained here once; with
// env.Observer set, the Consumer tells it of itself (StartConsumer) and of
// every delivery.
func NewConsumer(sub *runtime.Subscription, env runtime.Env, rules Rules, tr Transport) *Consumer {
	env = env.Complete()
	c := &Consumer{
		sub:         sub,
		rules:       rules,
		countHeader: rules.RetryCountHeaderName(),
		codec:       env.Codec,
		clock:       env.Clock,
		log:         env.Logger.With("subscription", sub.Name),
		metrics:     env.Metrics.Subscription(string(rules.Kind), sub.Name),
		send:        tr,
		auto:        sub.AutoAck,
		delayed:     newDelayedCopies(env.Clock),
		stopping:    make(chan struct{}),
		draining:    make(chan struct{}),
	}
	c.codecs, c.every = readers(sub, env.Codec)
	if rules.acks() {
		a, ok := tr.(Acknowledger)
		if !ok {
			panic(fmt.Sprintf("adapter: the transport of %s subscription %q does not acknowledge (it is no adapter.Acknowledger)", rules.Kind, sub.Name))
		}
		c.acks = a
	}
	if mws := middlewareOf(env, sub); len(mws) > 0 {
		c.chains = make([]runtime.Next, len(sub.Handlers))
		for i := range sub.Handlers {
			c.chains[i] = c.chain(&sub.Handlers[i], mws)
		}
	}
	if sub.BatchSize > 0 {
		c.batches = newBatcher(sub, env.Clock, tr)
	}
	c.replies = repliesOf(sub)
	if env.Observer != nil {
		c.obs = env.Observer
		types := make([]string, len(sub.Handlers))
		for i := range sub.Handlers {
			types[i] = sub.Handlers[i].MessageType
		}
		c.obsStop = env.Observer.StartConsumer(observe.ConsumerInfo{Broker: string(rules.Kind), Subscription: sub.Name, MessageTypes: types, WaitingCopies: c.WaitingCopies})
	}
	if rules.Kind == runtime.RabbitMQ {
		if c.acks != nil && !c.auto {
			c.crashLimit = sub.CrashLimit()
			c.suspectQueue = sub.SuspectQueue()
			c.quorum = sub.QueueType == runtime.QuorumQueue
			c.flusher, _ = tr.(AckFlusher)
		}
		c.queueDeadLetters = sub.QueueDeadLetter() != ""
		c.waitQueues = WaitQueues(sub)
		c.isWait = make(map[string]bool, len(c.waitQueues))
		for _, q := range c.waitQueues {
			c.isWait[q.Name] = true
		}
	}
	return c
}

// Subscription returns the subscription this consumer runs.
func (c *Consumer) Subscription() *runtime.Subscription { return c.sub }

// Name returns the subscription's name.
func (c *Consumer) Name() string { return c.sub.Name }

// Logger returns a logger that names the subscription.
func (c *Consumer) Logger() *slog.Logger { return c.log }

// IsWaitQueue reports whether queue is one of the subscription's RabbitMQ
// wait queues, for an adapter that counts the retry cycles its broker
// recorded (Delivery.RetryCycles).
func (c *Consumer) IsWaitQueue(queue string) bool { return c.isWait[queue] }

// UseBrokerRetry tells the Consumer that the subscription's queue holds a
// message handed back to it (Acknowledger.Release) for delay before
// delivering it again, and counts those returns apart from crashes: a
// RabbitMQ 4.3 quorum queue declared with the delayed-retry arguments
// QueueArguments gives (BrokerRetry). A retry is then a Release, with no
// copy (Verdict.ByBroker), its delay the queue's (a delay the handler
// asks for, runtime.RetryAfter, picks among the subscription's delays as
// on the wait-queue path, and it has one), but for a suspect's retry,
// which takes a wait queue; a message not started before shutdown goes back as
// a copy (ReleaseCopy), since handed back it would count as a retry; and
// the adapter reads each delivery's Delivery.BrokerRetries. Call it
// before the first delivery.
func (c *Consumer) UseBrokerRetry(delay time.Duration) { c.brokerDelay = delay }

// ChooseRetry decides how the subscription retries on a RabbitMQ broker
// of version v, its queue declared (lacksArguments: it exists without the
// delayed-retry arguments, declared before): through the queue's own
// delayed retry where BrokerRetry allows it and the queue has them
// (UseBrokerRetry), else through wait queues. It returns the queue's
// delay, 0 for wait queues, and then why, "" when the subscription chose
// wait queues or does not retry. Call it before the first delivery.
func (c *Consumer) ChooseRetry(v RabbitMQVersion, lacksArguments bool) (delay time.Duration, why string) {
	delay, ok, why := BrokerRetry(c.sub, v)
	switch {
	case !ok:
		return 0, why
	case lacksArguments:
		return 0, "the queue exists without the delayed-retry arguments"
	}
	c.UseBrokerRetry(delay)
	return delay, ""
}

// BrokerRetry returns the delay the subscription's queue holds a retried
// message for (UseBrokerRetry), 0 when retries are copies.
func (c *Consumer) BrokerRetry() time.Duration { return c.brokerDelay }

// SuspectQueue returns the queue the adapter consumes beside the
// subscription's own, one delivery at a time, marking its deliveries
// Delivery.Suspect: where the Consumer sets aside the messages that come
// back after their worker died. It is "" where none is needed (ZeroMQ,
// ack=auto).
func (c *Consumer) SuspectQueue() string { return c.suspectQueue }

// RetryCountHeader returns the name of the retry count header, as the
// broker writes it.
func (c *Consumer) RetryCountHeader() string { return c.countHeader }

// Handle runs one delivery: it decides what becomes of d and carries it
// out through the Transport, then logs and counts the outcome. It never
// panics because of a handler, and blocks only for the handler, the
// sending of a copy and, on RabbitMQ, a suspect's run (below).
//
// On RabbitMQ (ack=manual) a message that comes back unsettled (its
// worker crashed or lost its connection while holding it) is a suspect:
// it may be what killed the worker, or it may merely have been held with
// it. The Consumer never runs it among others, where a crash would count
// against them all. It sets it aside instead (VerdictIsolate), without
// running it: a copy with its count of crashes (HeaderCrashes, 1; see
// crashes) goes to the subscription's suspect queue, which the adapter
// consumes one delivery at a time (Delivery.Suspect), and each runs
// alone there: Handle waits until no other handler of the subscription
// runs, and holds the others back until it is settled. Should the worker
// die while a suspect runs, only the suspect comes back, and it is set
// aside again with its count one higher. A message that came back as
// often as the subscription's crash limit (runtime.Subscription.CrashLimit)
// is parked (or dropped, without a dead-letter queue) without running
// again, with a reason that says so. Suspects are handled in the order
// they came back, apart from the messages of the subscription's queue.
//
// ctx is the handlers' context: once it has ended, d is no longer settled
// but left to the broker (or, where nothing can take it back, reported
// lost). It returns the verdict and the error it was settled with, for an
// adapter or harness that records them; a ZeroMQ retry copy that waits
// for its delay is settled later, and so is a copy whose outcome the
// Transport reports after Send returned (RabbitMQ: once the broker
// confirmed it). Then the error returned is nil.
func (c *Consumer) Handle(ctx context.Context, d *Delivery) (Verdict, error) {
	if ctx.Err() != nil {
		if c.acks != nil && !c.auto {
			v := Verdict{Kind: VerdictAck, Reason: "not handled before the shutdown deadline"}
			c.metrics.Delivered.Add(1)
			c.settle(d, v, ErrLeftToBroker, false)
			return v, ErrLeftToBroker
		}
		return c.Discard(d, "not handled before the shutdown deadline", ErrNotHandled), ErrNotHandled
	}
	c.metrics.Delivered.Add(1)
	switch {
	case c.crashLimit == 0:
	case d.Suspect:
		return c.handleAlone(ctx, d)
	case c.crashes(d) > 0:
		// It came back: it is set aside (or parked) and runs no handler,
		// so it waits for no suspect; held back, it would be counted
		// with the suspect's crash.
	default:
		c.alone.RLock()
		defer c.alone.RUnlock()
	}
	return c.handle(ctx, d)
}

// handleAlone handles d, a delivery of the suspect queue, with no other
// handler of the subscription running: it waits for those running to
// return, and holds back those that would start until d is settled. The
// acks the transport holds are sent first, so that a crash while d runs
// brings none of the messages handled before it back; and once d is
// carried out, its own settlement (and its copy, if it sent one) is sent
// before another handler starts.
func (c *Consumer) handleAlone(ctx context.Context, d *Delivery) (Verdict, error) {
	c.alone.Lock()
	defer c.alone.Unlock()
	c.flushAll(ctx)
	v, err := c.handle(ctx, d)
	c.flushAll(ctx)
	return v, err
}

// flushAll waits for the copies being sent (their originals are settled
// once the broker took them), then has the transport send the acks it
// holds. It gives up when ctx ends.
func (c *Consumer) flushAll(ctx context.Context) {
	if err := c.unsent.wait(ctx); err != nil {
		return
	}
	if c.flusher != nil {
		_ = c.flusher.FlushAcks(ctx) // a lost channel: what it held comes back anyway
	}
}

// handle is Handle once d is counted as delivered.
func (c *Consumer) handle(ctx context.Context, d *Delivery) (Verdict, error) {
	count, countErr := c.number(d)
	hctx := ctx
	if c.obs != nil {
		hctx = c.observe(ctx, d, count)
	}
	v := c.process(ctx, hctx, d, countErr)
	if d.batched != nil {
		// Its batch's leader carried it out (see batchCall).
		r := *d.batched
		d.batched = nil
		return r.v, r.err
	}
	return c.finish(ctx, d, v)
}

// finish carries out v, d's verdict, and returns it with the error d was
// settled with. Once ctx has ended, a delivery that is not acknowledged
// is left to the broker where it can take it back.
func (c *Consumer) finish(ctx context.Context, d *Delivery, v Verdict) (Verdict, error) {
	if ctx.Err() != nil && c.acks != nil && !c.auto && v.Kind != VerdictAck {
		c.settle(d, v, ErrLeftToBroker, false)
		return v, ErrLeftToBroker
	}
	if c.replies {
		if v, err, done := c.answer(ctx, d, v); done {
			return v, err
		}
	}
	err := c.carryOut(ctx, d, &v)
	return v, err
}

// observe tells the Observer that d starts, and returns the context d's
// handler runs in.
func (c *Consumer) observe(ctx context.Context, d *Delivery, retryCount int) context.Context {
	octx, obs := c.obs.StartDelivery(ctx, observe.DeliveryStart{
		Broker:       string(c.rules.Kind),
		Subscription: c.sub.Name,
		MessageID:    d.MessageID,
		MessageType:  d.Type,
		Attempt:      d.attempt,
		RetryCount:   retryCount,
		Headers:      d.Headers,
	})
	if obs != nil {
		d.obs = &observation{DeliveryObservation: obs}
	}
	if octx == nil {
		return ctx
	}
	return octx
}

// process decodes d, calls its handler and decides what happens to it;
// countErr is why d's retry count could not be read. ctx is d's own
// context, base the handlers': a batch call runs in base.
func (c *Consumer) process(base, ctx context.Context, d *Delivery, countErr error) Verdict {
	if countErr != nil {
		return c.poison(d, d.Type, fmt.Sprintf("retry count header %s is unreadable: %v", c.countHeader, countErr))
	}
	if max := c.sub.MaxPayloadBytes; max > 0 && len(d.Body) > max {
		return c.poison(d, d.Type, fmt.Sprintf("payload of %d bytes exceeds max_payload_bytes=%d", len(d.Body), max))
	}
	i := c.handlerIndex(d.Type)
	if i < 0 {
		if d.Type == "" {
			return c.poison(d, "", "the message has no type, so no handler can take it")
		}
		return c.poison(d, d.Type, fmt.Sprintf("no handler for message type %q (this subscription handles %s)", d.Type, c.typeList()))
	}
	h := c.handler(i, d)
	d.attempt = min(d.attempt, h.Policy.Attempts()) // a forged count makes this the last attempt
	if c.crashLimit > 0 {
		switch n := c.crashes(d); {
		case n >= c.crashLimit:
			return c.crashed(d, h, n)
		case n > 0 && (!d.Suspect || d.Redelivered):
			// A message that came back, or a suspect that came back
			// again: counted, and set aside to run alone.
			return c.isolate(d, h, n)
		}
	}
	if d.MessageID == "" && h.Transactional() {
		return c.poisonFor(d, h, runtime.ErrNoMessageID.Error())
	}
	v, reason := c.read(i, h, d)
	if reason != "" {
		return c.poisonFor(d, h, reason)
	}
	md := runtime.Metadata{
		Subscription: c.sub.Name,
		MessageID:    d.MessageID,
		MessageType:  h.MessageType,
		Attempt:      d.attempt,
		MaxAttempts:  h.Policy.Attempts(),
		Headers:      d.Headers,
		Redelivered:  d.Redelivered,
		Raw:          d.Raw,
		Properties:   d.Properties,
	}
	if h.Every() {
		v = runtime.NewDelivery(d.Body, d.ContentType, md, c.codec)
	}
	if c.batches != nil && h.Batched() {
		return c.batchCall(base, ctx, d, i, h, v, md)
	}
	return c.decide(d, h, c.call(ctx, d, i, h, v, md))
}

// handlerIndex returns the index of the handler of messageType, else
// that of the handler of every message type, else -1.
func (c *Consumer) handlerIndex(messageType string) int {
	if messageType == "" {
		// ZeroMQ senders in other languages may omit the type header; a
		// subscription with one handler knows what they mean.
		if c.rules.Kind == runtime.ZeroMQ && len(c.sub.Handlers) == 1 {
			return 0
		}
		return c.every
	}
	for i := range c.sub.Handlers {
		if c.sub.Handlers[i].MessageType == messageType {
			return i
		}
	}
	return c.every
}

func (c *Consumer) handlerFor(messageType string) *runtime.Handler {
	if i := c.handlerIndex(messageType); i >= 0 {
		return &c.sub.Handlers[i]
	}
	return nil
}

func (c *Consumer) typeList() string {
	names := make([]string, len(c.sub.Handlers))
	for i, h := range c.sub.Handlers {
		names[i] = fmt.Sprintf("%q", h.MessageType)
	}
	return strings.Join(names, ", ")
}

// panicFrames is how many frames of a panic's stack its error line
// shows, from where it panicked; the whole stack is logged at debug.
const panicFrames = 5

// decode decodes d's body for h with codec. A panic while decoding (in a type's own
// UnmarshalJSON or UnmarshalText, in encoding/json, in a codec) is an error,
// so that the message is poison like any other body that does not decode,
// and the worker goes on. Its stack is logged at debug level; the parked
// message's reason names the panic.
func (c *Consumer) decode(h *runtime.Handler, codec runtime.Codec, d *Delivery) (v any, err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		c.log.Debug("decoding panicked",
			"message_id", d.MessageID, "message_type", h.MessageType, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		v, err = nil, fmt.Errorf("decoding panicked: %v", r)
	}()
	return h.Decode(codec, d.Body)
}

// poison is the verdict for a delivery that cannot reach any handler.
func (c *Consumer) poison(d *Delivery, messageType, reason string) Verdict {
	return c.park(Verdict{Poison: true, Reason: reason, Attempt: d.attempt, MaxAttempts: 1, MessageType: messageType}, c.sub.PoisonDeadLetter())
}

// poisonFor is the verdict for a delivery its handler cannot take.
func (c *Consumer) poisonFor(d *Delivery, h *runtime.Handler, reason string) Verdict {
	return c.park(Verdict{Poison: true, Reason: reason, Attempt: d.attempt, MaxAttempts: h.Policy.Attempts(), MessageType: h.MessageType}, h.Policy.DeadLetter)
}

// park sends v to deadLetter. With none, it rejects it, so that a
// dead-letter exchange an operator set on the queue takes it; but when the
// queue dead-letters into the subscription's own dead-letter queue
// (runtime.Subscription.QueueDeadLetter), a reject would park it there
// unexplained, so it is dropped, as its handler's policy says.
func (c *Consumer) park(v Verdict, deadLetter string) Verdict {
	if deadLetter == "" {
		v.Kind = VerdictReject
		if c.queueDeadLetters {
			v.Kind = VerdictDrop
		}
		return v
	}
	v.Kind = VerdictPark
	v.Queue = deadLetter
	return v
}

// decide applies h's policy to the handler's outcome for d. This is the
// retry state machine, shared by every broker.
func (c *Consumer) decide(d *Delivery, h *runtime.Handler, out runtime.Outcome) Verdict {
	p := h.Policy
	v := Verdict{Attempt: d.attempt, MaxAttempts: p.Attempts(), MessageType: h.MessageType}
	reason := "the handler asked for it"
	if err := out.Err(); err != nil {
		reason = err.Error()
	}
	switch out.Action() {
	case runtime.ActionAck:
		v.Kind = VerdictAck
		v.Duplicate = out.Duplicate()
		d.reply = out.Reply()
		return v
	case runtime.ActionDrop:
		v.Kind = VerdictDrop
		v.Reason = "dropped by the handler: " + reason
		return v
	case runtime.ActionDeadLetter:
		v.Reason = "dead-lettered by the handler: " + reason
		return c.park(v, p.DeadLetter)
	}
	// A failure. Retry while attempts remain; then park or drop.
	if d.attempt < p.Attempts() {
		v.Kind = VerdictRetry
		v.Delay = out.Delay()
		v.Reason = reason
		switch {
		case c.rules.delaysInMemory():
			v.Queue = p.OutRetry
		case c.brokerDelay > 0 && !d.Suspect:
			// The queue waits out its one delay itself: the step a
			// requested delay picks on the wait-queue path too. A
			// suspect's retry takes a wait queue: handed back, it would
			// come back redelivered to the suspect queue, which counts as
			// a crash.
			v.Delay, v.ByBroker = c.brokerDelay, true
		default:
			wq := WaitQueueFor(c.waitQueues, d.attempt, v.Delay)
			v.Delay, v.Queue = wq.TTL, wq.Name
		}
		return v
	}
	switch {
	case p.MaxAttempts < 1 && p.DeadLetter == "":
		v.Reason = "failed, and nothing brings it back (no max_attempts, no dead_letter): " + reason
	case p.MaxAttempts < 1:
		v.Reason = "failed: " + reason
	default:
		v.Reason = fmt.Sprintf("failed on attempt %d of %d: %s", d.attempt, p.Attempts(), reason)
	}
	if p.DeadLetter == "" {
		v.Kind = VerdictDrop
		return v
	}
	v.Kind = VerdictPark
	v.Queue = p.DeadLetter
	return v
}

// The states of a sending.
const (
	copySending  int32 = iota // Send has not returned, done has not run
	copyReturned              // Send returned first: done settles later
	copySettled               // done ran before Send returned
)

// Stop tells the Consumer that its broker is shutting down: pauses end,
// and retry copies still waiting for their delay in memory are lost (each
// is settled with ErrCopyLost). It returns how many were lost. Copies being
// sent, or awaiting their outcome, go on; WaitCopies waits for them.
func (c *Consumer) Stop() int {
	c.Drain()
	c.stopOnce.Do(func() {
		close(c.stopping)
		if c.obsStop != nil {
			c.obsStop()
		}
	})
	n := c.delayed.stop()
	if n > 0 {
		c.log.Warn("retry copies still waiting for their delay in memory are lost at shutdown (ZeroMQ stores nothing)", "lost", n)
	}
	return n
}

// Drain tells the Consumer that its broker began shutting down: a batch
// waiting for more messages is handled at once with the messages it holds,
// and a batch that starts from now on does not wait for more. A broker
// calls it once it takes no more deliveries, before it waits for the
// handlers; Stop drains too. It does nothing to a subscription without
// batches.
func (c *Consumer) Drain() {
	c.drainOnce.Do(func() { close(c.draining) })
}

// WaitingCopies returns how many retry copies wait for their delay in
// memory.
func (c *Consumer) WaitingCopies() int { return c.delayed.waiting() }

// WaitCopies waits until the copies being sent are sent and their
// originals settled, or ctx ends.
func (c *Consumer) WaitCopies(ctx context.Context) error {
	if err := c.delayed.wait(ctx); err != nil {
		return err
	}
	return wait.Group(ctx, &c.copies)
}

// Discard settles d, a message that never reached a handler because the
// adapter could not read it (malformed, too large) or could no longer run
// it. It counts d as delivered and settles it as a drop for reason. With
// err nil the message is poison, since no handler could ever take it; with
// err set, it was not handled because of err, and counts as failed. It
// returns the verdict it settled.
func (c *Consumer) Discard(d *Delivery, reason string, err error) Verdict {
	c.metrics.Delivered.Add(1)
	v := Verdict{Kind: VerdictDrop, Poison: err == nil, Reason: reason, Attempt: d.attempt, MessageType: d.Type}
	if err != nil && d.attempt == 0 {
		// A message that could have been handled: name its attempt and its
		// cap, so that the log line says exactly what was lost.
		_, _ = c.number(d)
		c.unstarted(d, &v)
	}
	if c.obs != nil && d.obs == nil {
		c.observe(context.Background(), d, 0)
	}
	c.settle(d, v, err, false)
	return v
}

// Release settles d, a delivery the adapter took but will not run because
// shutdown began before a handler took it. On a broker with
// acknowledgements it is handed back through the Acknowledger's Release
// (RabbitMQ: basic.nack with requeue, which RabbitMQ 4.3 does not count
// toward a delivery limit: the message did not fail); with ack=auto it is
// lost, since the broker counted it as delivered when it sent it (a drop
// that failed). A delivery of the suspect queue (Delivery.Suspect) goes
// back there as a copy with its count of crashes instead (VerdictIsolate),
// since one handed back would come back redelivered, which counts as one
// more crash. Either way it counts as delivered, and as Released when
// handed back (Failed when the broker refused it), the Observer sees it
// end with its verdict, and it is logged. It returns the verdict it
// settled (a copy's original is settled once the broker took the copy).
func (c *Consumer) Release(ctx context.Context, d *Delivery) Verdict {
	if c.acks == nil || c.auto {
		return c.Discard(d, "not started before shutdown", errLostUnstarted)
	}
	c.metrics.Delivered.Add(1)
	count, _ := c.number(d)
	v := Verdict{Kind: VerdictRelease, Reason: "not started before shutdown"}
	c.unstarted(d, &v)
	if c.obs != nil {
		c.observe(context.Background(), d, count)
	}
	if c.brokerDelay > 0 && !d.Suspect {
		// Handed back, it would count as a retry, and wait the queue's
		// delay: it goes back to its queue as a copy of the same attempt.
		_ = c.sendCopy(ctx, d, c.rules.releaseCopy(d, c.sub.Name), v)
		return v
	}
	if d.Suspect && c.crashLimit > 0 {
		// Handed back, it would come back redelivered, which counts as a
		// crash of its run alone: it goes back as a copy with its count.
		v.Kind, v.Queue = VerdictIsolate, c.suspectQueue
		v.Reason = "not started before shutdown: back to " + c.suspectQueue + " with its count of crashes"
		_ = c.sendCopy(ctx, d, c.rules.suspectCopy(d, v.Queue, c.crashes(d)), v)
		return v
	}
	var err error
	if rerr := c.acks.Release(ctx, d); rerr != nil {
		err = fmt.Errorf("nack with requeue failed: %w; the broker delivers the message again when the channel closes", rerr)
	}
	c.settle(d, v, err, false)
	return v
}

// number puts d's headers in the broker's form (Rules.Headers) and numbers
// d by the one rule (attemptOf): it sets d's attempt, and returns the
// retry count d carries, with why it could not be read.
func (c *Consumer) number(d *Delivery) (count int, err error) {
	d.Headers = c.rules.Headers(d.Headers)
	count, err = retrycount.Parse(d.Headers[c.countHeader])
	d.attempt = attemptOf(count, d.RetryCycles, d.BrokerRetries)
	return count, err
}

// unstarted names in v, the verdict of d, a message no handler took
// although one could have, d's attempt and, when a handler takes its
// type, its cap and type: so that the log line says exactly what was
// lost or handed back.
func (c *Consumer) unstarted(d *Delivery, v *Verdict) {
	v.Attempt = d.attempt
	v.MessageType = d.Type
	if h := c.handlerFor(d.Type); h != nil {
		v.MaxAttempts = h.Policy.Attempts()
		if !h.Every() {
			v.MessageType = h.MessageType
		}
	}
}

// copyCount counts the copies being sent, and lets a caller wait until
// there are none, while more may start.
type copyCount struct {
	mu   sync.Mutex
	n    int
	none chan struct{} // closed once n drops to 0; nil while n is 0
}

func (cc *copyCount) add() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.n == 0 {
		cc.none = make(chan struct{})
	}
	cc.n++
}

func (cc *copyCount) done() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.n--
	if cc.n == 0 {
		close(cc.none)
		cc.none = nil
	}
}

// wait waits until no copy is being sent, or ctx ends and then returns
// ctx.Err().
func (cc *copyCount) wait(ctx context.Context) error {
	cc.mu.Lock()
	none := cc.none
	cc.mu.Unlock()
	if none == nil {
		return nil
	}
	select {
	case <-none:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
