package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// Delivery is one received message, as a broker adapter hands it to its
// Consumer.
type Delivery struct {
	// MessageID is the message id, or "" when the sender set none.
	MessageID string
	// Type is the message type name on the wire; it selects the handler.
	Type string
	// ContentType is the content type the sender declared, or "".
	ContentType string
	// Headers are the application headers, as text.
	Headers map[string]string
	// Body is the payload.
	Body []byte
	// Attempt is the 1-based delivery number the adapter computed from the
	// message's retry count.
	Attempt int
	// Redelivered reports a broker redelivery (RabbitMQ).
	Redelivered bool
	// Raw is the adapter's own delivery value (*amqp091.Delivery for
	// RabbitMQ), for handlers that need more.
	Raw any
}

// Metadata is what a handler may learn about the delivery it handles. A
// handler receives it when it declares a runtime.Metadata parameter.
type Metadata struct {
	Subscription string
	MessageID    string
	MessageType  string
	// Attempt is the 1-based number of this delivery.
	Attempt int
	// MaxAttempts is the cap on deliveries in force for this message type.
	MaxAttempts int
	Headers     map[string]string
	Redelivered bool
	// Raw is the broker adapter's own delivery value.
	Raw any
}

// VerdictKind is what must happen to a delivery once processed.
type VerdictKind uint8

const (
	// VerdictAck: acknowledge; the message is done.
	VerdictAck VerdictKind = iota
	// VerdictRetry: send a copy with the retry count + 1 (RabbitMQ: to a
	// wait queue; ZeroMQ: to Verdict.Queue after Verdict.Delay), then ack.
	VerdictRetry
	// VerdictPark: publish a copy on the dead-letter queue Verdict.Queue,
	// then ack.
	VerdictPark
	// VerdictReject: hand the message back to the broker without requeue
	// (RabbitMQ: nack, so a broker-level dead-letter exchange gets it;
	// ZeroMQ: dropped).
	VerdictReject
	// VerdictDrop: ack and forget, with a warning.
	VerdictDrop
)

func (k VerdictKind) String() string {
	switch k {
	case VerdictAck:
		return "ack"
	case VerdictRetry:
		return "retry"
	case VerdictPark:
		return "park"
	case VerdictReject:
		return "reject"
	case VerdictDrop:
		return "drop"
	}
	return fmt.Sprintf("VerdictKind(%d)", uint8(k))
}

// Verdict is the decision the runtime took for one delivery. The broker
// adapter carries it out, then reports back with Consumer.Settle.
type Verdict struct {
	Kind VerdictKind
	// Delay is the delay the handler asked for (VerdictRetry), 0 for the
	// policy's. Adapters set it to the delay actually applied before Settle.
	Delay time.Duration
	// Queue is the dead-letter queue (VerdictPark) or the ZeroMQ retry
	// destination (VerdictRetry; out_retry=self is resolved to the
	// subscription's own name). RabbitMQ adapters set it to the wait queue
	// before Settle.
	Queue string
	// Reason says why the message was retried, parked, rejected or dropped:
	// the handler's error text or the poison cause.
	Reason string
	// Poison is set when the message never reached a handler.
	Poison bool
	// Attempt is the delivery number, MaxAttempts the cap in force.
	Attempt     int
	MaxAttempts int
	// MessageType is the handler's type, or the delivery's for poison.
	MessageType string
}

// Consumer runs one subscription's handlers: it decodes a delivery, picks the
// handler by message type, calls it (recovering a panic), and turns the
// outcome and the policy into a Verdict. Broker adapters receive, compute
// the attempt number, call Process, carry out the verdict and call Settle.
// The same rules therefore hold on every broker.
type Consumer struct {
	sub     *Subscription
	kind    BrokerKind
	codec   Codec
	log     *slog.Logger
	metrics *SubscriptionMetrics
	once    sync.Map
}

// NewConsumer returns the Consumer of sub running on a broker of the given
// kind. An App makes these; broker tests may too.
func NewConsumer(sub *Subscription, kind BrokerKind, env Env) *Consumer {
	if env.Codec == nil {
		env.Codec = JSON{}
	}
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	if env.Metrics == nil {
		env.Metrics = NewMetrics()
	}
	return &Consumer{
		sub:     sub,
		kind:    kind,
		codec:   env.Codec,
		log:     env.Logger.With("subscription", sub.Name),
		metrics: env.Metrics.Subscription(kind, sub.Name),
	}
}

// CheckConsumers returns, as one error, every reason why consumers cannot
// run on a broker of the given kind: each subscription's Validate errors,
// and a subscription given twice. It returns nil when there is none. App.Run
// checks its mounts before it starts a broker; every Broker's Start calls
// CheckConsumers as well, so that a Broker started without an App checks
// the same rules.
func CheckConsumers(kind BrokerKind, consumers []*Consumer) error {
	var errs []error
	seen := make(map[string]bool, len(consumers))
	for _, c := range consumers {
		if err := c.sub.Validate(kind); err != nil {
			errs = append(errs, err)
		}
		if seen[c.sub.Name] {
			errs = append(errs, fmt.Errorf("runtime: subscription %q is mounted twice", c.sub.Name))
		}
		seen[c.sub.Name] = true
	}
	return errors.Join(errs...)
}

// Subscription returns the subscription this consumer runs.
func (c *Consumer) Subscription() *Subscription { return c.sub }

// Name returns the subscription's name.
func (c *Consumer) Name() string { return c.sub.Name }

// Logger returns a logger that names the subscription.
func (c *Consumer) Logger() *slog.Logger { return c.log }

// Metrics returns the subscription's counters.
func (c *Consumer) Metrics() *SubscriptionMetrics { return c.metrics }

// WarnOnce logs msg at warning level the first time it is called with key,
// and never again for this subscription.
func (c *Consumer) WarnOnce(key, msg string, args ...any) {
	if _, loaded := c.once.LoadOrStore(key, struct{}{}); !loaded {
		c.log.Warn(msg, args...)
	}
}

// Process decodes d, calls its handler and decides what happens to it. It
// never panics because of a handler, and never blocks but for the handler.
func (c *Consumer) Process(ctx context.Context, d *Delivery) Verdict {
	c.metrics.Delivered.Add(1)
	if max := c.sub.MaxPayloadBytes; max > 0 && len(d.Body) > max {
		return c.poison(d, d.Type, fmt.Sprintf("payload of %d bytes exceeds max_payload_bytes=%d", len(d.Body), max))
	}
	h := c.handlerFor(d.Type)
	if h == nil {
		if d.Type == "" {
			return c.poison(d, "", "the message has no type, so no handler can take it")
		}
		return c.poison(d, d.Type, fmt.Sprintf("no handler for message type %q (this subscription handles %s)", d.Type, c.typeList()))
	}
	v, err := h.decode(c.codec, d.Body)
	if err != nil {
		return c.poisonFor(d, h, fmt.Sprintf("body does not decode into %s: %v", h.MessageType, err))
	}
	md := Metadata{
		Subscription: c.sub.Name,
		MessageID:    d.MessageID,
		MessageType:  h.MessageType,
		Attempt:      d.Attempt,
		MaxAttempts:  h.Policy.Attempts(),
		Headers:      d.Headers,
		Redelivered:  d.Redelivered,
		Raw:          d.Raw,
	}
	return c.decide(d, h, c.call(ctx, h, v, md))
}

func (c *Consumer) handlerFor(messageType string) *Handler {
	if messageType == "" {
		// ZeroMQ senders in other languages may omit the type header; a
		// subscription with one handler knows what they mean.
		if c.kind == ZeroMQ && len(c.sub.Handlers) == 1 {
			return &c.sub.Handlers[0]
		}
		return nil
	}
	return c.sub.Handler(messageType)
}

func (c *Consumer) typeList() string {
	names := make([]string, len(c.sub.Handlers))
	for i, h := range c.sub.Handlers {
		names[i] = fmt.Sprintf("%q", h.MessageType)
	}
	return strings.Join(names, ", ")
}

func (c *Consumer) call(ctx context.Context, h *Handler, v any, md Metadata) (out Outcome) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("handler panicked; treating it as a failure",
				"message_id", md.MessageID, "message_type", md.MessageType, "attempt", md.Attempt,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			out = Retry().Because(fmt.Errorf("handler panicked: %v", r))
		}
	}()
	return h.call(ctx, v, md)
}

// poison is the verdict for a delivery that cannot reach any handler.
func (c *Consumer) poison(d *Delivery, messageType, reason string) Verdict {
	return c.park(Verdict{Poison: true, Reason: reason, Attempt: d.Attempt, MaxAttempts: 1, MessageType: messageType}, c.sub.PoisonDeadLetter())
}

// poisonFor is the verdict for a delivery its handler cannot decode.
func (c *Consumer) poisonFor(d *Delivery, h *Handler, reason string) Verdict {
	return c.park(Verdict{Poison: true, Reason: reason, Attempt: d.Attempt, MaxAttempts: h.Policy.Attempts(), MessageType: h.MessageType}, h.Policy.DeadLetter)
}

// park sends v to deadLetter, or rejects it when there is none.
func (c *Consumer) park(v Verdict, deadLetter string) Verdict {
	if deadLetter == "" {
		v.Kind = VerdictReject
		return v
	}
	v.Kind = VerdictPark
	v.Queue = deadLetter
	return v
}

// decide applies h's policy to the handler's outcome for the attempt-th
// delivery. This is the retry state machine, shared by every broker.
func (c *Consumer) decide(d *Delivery, h *Handler, out Outcome) Verdict {
	p := h.Policy
	v := Verdict{Attempt: d.Attempt, MaxAttempts: p.Attempts(), MessageType: h.MessageType}
	reason := "the handler asked for it"
	if err := out.Err(); err != nil {
		reason = err.Error()
	}
	switch out.Action() {
	case ActionAck:
		v.Kind = VerdictAck
		return v
	case ActionDrop:
		v.Kind = VerdictDrop
		v.Reason = "dropped by the handler: " + reason
		return v
	case ActionDeadLetter:
		v.Reason = "dead-lettered by the handler: " + reason
		return c.park(v, p.DeadLetter)
	}
	// A failure. Retry while attempts remain; then park or drop.
	if d.Attempt < p.Attempts() {
		v.Kind = VerdictRetry
		v.Delay = out.Delay()
		v.Queue = p.RetryQueue(c.sub.Name)
		v.Reason = reason
		return v
	}
	switch {
	case p.MaxAttempts < 1 && p.DeadLetter == "":
		v.Reason = "failed, and nothing brings it back (no max_attempts, no dead_letter): " + reason
	case p.MaxAttempts < 1:
		v.Reason = "failed: " + reason
	default:
		v.Reason = fmt.Sprintf("failed on attempt %d of %d: %s", d.Attempt, p.Attempts(), reason)
	}
	if p.DeadLetter == "" {
		v.Kind = VerdictDrop
		return v
	}
	v.Kind = VerdictPark
	v.Queue = p.DeadLetter
	return v
}

// Settle records what the adapter did with d: err is nil when the verdict
// was carried out, else the error that stopped it (the adapter says in it
// what it did instead, for example "nacked with requeue"). Settle logs every
// retry, park, reject and drop with the subscription, message id and reason,
// and counts it.
func (c *Consumer) Settle(d *Delivery, v Verdict, err error) {
	if err != nil {
		c.metrics.Failed.Add(1)
		c.logSettled(slog.LevelError, "could not "+v.Kind.String()+" the message", d, v, "reason", v.Reason, "err", err)
		return
	}
	switch v.Kind {
	case VerdictAck:
		c.metrics.Acked.Add(1)
		c.logSettled(slog.LevelDebug, "message handled", d, v)
	case VerdictRetry:
		c.metrics.Retried.Add(1)
		c.logSettled(slog.LevelInfo, "message will be retried", d, v, "delay", v.Delay, "via", v.Queue, "reason", v.Reason)
	case VerdictPark:
		c.metrics.Parked.Add(1)
		c.logSettled(slog.LevelWarn, "message parked", d, v, "dead_letter", v.Queue, "poison", v.Poison, "reason", v.Reason)
	case VerdictReject:
		c.metrics.Rejected.Add(1)
		c.logSettled(slog.LevelWarn, "message rejected without requeue", d, v, "poison", v.Poison, "reason", v.Reason)
	case VerdictDrop:
		c.metrics.Dropped.Add(1)
		c.logSettled(slog.LevelWarn, "message dropped", d, v, "reason", v.Reason)
	}
}

// Discard settles d, a delivery that never reached Process: the adapter
// could not make a Delivery of what it received (a malformed message, one
// too large to read), or could no longer run it. It counts d as delivered
// and settles it as a drop for reason, as Settle does. With err nil the
// message is poison, since no handler could ever take it; with err set, it
// was not handled because of err, and counts as failed. Adapters call it
// instead of building the verdict themselves; it returns the verdict it
// settled, for an adapter that records it.
func (c *Consumer) Discard(d *Delivery, reason string, err error) Verdict {
	c.metrics.Delivered.Add(1)
	v := Verdict{Kind: VerdictDrop, Poison: err == nil, Reason: reason, Attempt: d.Attempt, MessageType: d.Type}
	c.Settle(d, v, err)
	return v
}

// logSettled logs msg about d and v at level, followed by extra attributes.
// Nothing is built when the level is off, so an acknowledged message costs
// no allocation unless debug logging is on.
func (c *Consumer) logSettled(level slog.Level, msg string, d *Delivery, v Verdict, extra ...any) {
	ctx := context.Background()
	if !c.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]any, 0, 6+len(extra))
	attrs = append(attrs, "message_id", d.MessageID)
	if v.MessageType != "" {
		attrs = append(attrs, "message_type", v.MessageType)
	}
	if v.Attempt > 0 { // 0: a malformed message, never counted
		attrs = append(attrs, "attempt", v.Attempt, "max_attempts", v.MaxAttempts)
	}
	c.log.Log(ctx, level, msg, append(attrs, extra...)...)
}
