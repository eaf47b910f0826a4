package runtime

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/streamgen/streamgen/internal/annotvalue"
	"github.com/streamgen/streamgen/runtime/internal/retrycount"
	"github.com/streamgen/streamgen/runtime/internal/waitqueue"
)

// QueueType is the RabbitMQ queue type declared for a subscription.
type QueueType string

const (
	// ClassicQueue is RabbitMQ's default queue type.
	ClassicQueue QueueType = "classic"
	// QuorumQueue is a replicated queue (x-queue-type=quorum).
	QuorumQueue QueueType = "quorum"
)

// Policy is the failure policy of one message type on a subscription.
type Policy struct {
	// MaxAttempts caps the deliveries of one message, the first included.
	// 0 means not set, which allows one delivery.
	MaxAttempts int
	// DeadLetter is the queue that takes exhausted and poison messages; ""
	// drops exhausted messages with a warning.
	DeadLetter string
	// OutRetry (ZeroMQ) is the subscription retry copies go to: the
	// handler's own subscription to send them back into its bound queue
	// (the annotation's out_retry=self), or another one.
	OutRetry string
	// Timeout bounds each handler call: its context is cancelled after
	// that long, with a cause that says so ("handler timed out after 2s",
	// errors.Is context.DeadlineExceeded). The handler must honour
	// its context: the runtime cannot stop a call that ignores it, it
	// waits for its return. What a late call returns counts: a failure
	// (the context's error, say) has the reason "handler timed out after
	// 2s", and an ack, drop or dead-letter is carried out
	// as asked, with a warning that the call was late, so that work done
	// is not done again. Middleware runs outside the timeout and sees the
	// outcome. 0 means no timeout.
	Timeout time.Duration
}

// Attempts returns the effective cap on deliveries: MaxAttempts, or 1 when it
// is not set.
func (p Policy) Attempts() int {
	if p.MaxAttempts < 1 {
		return 1
	}
	return p.MaxAttempts
}

// Subscription is a queue (RabbitMQ) or subscription name (ZeroMQ) and the
// handlers mounted on it, one per message type. Generated Mount functions
// build these; hand-written code may too.
type Subscription struct {
	// Name is the queue or subscription name.
	Name string
	// Broker is the broker the subscription was written for; AnyBroker runs
	// on whichever it is mounted on.
	Broker BrokerKind
	// RetryDelays (RabbitMQ) is the wait-queue TTL, or a ladder of them: the
	// n-th attempt waits RetryDelays[min(n, len)-1].
	RetryDelays []time.Duration
	// Retry (RabbitMQ) says who waits out RetryDelays: the quorum queue
	// itself (RetryBroker), or wait queues (RetryQueue); the default,
	// RetryAuto, is the queue itself where it can. See RetryPath.
	Retry RetryPath
	// AutoAck (RabbitMQ, the annotation's ack=auto) lets the broker
	// consider a message acknowledged as soon as it is sent: at-most-once,
	// no retries, and a crash loses what was in flight. By default a
	// delivery is acknowledged once its handler settled it: at-least-once,
	// with retries and dead letters.
	AutoAck bool
	// Prefetch bounds the deliveries held by the worker and not yet settled
	// (RabbitMQ: basic.qos). 0 means the broker adapter's default.
	Prefetch int
	// Concurrency is how many handler calls may run at once. 0 means 1.
	Concurrency int
	// MaxPayloadBytes makes larger bodies poison. 0 means no limit.
	MaxPayloadBytes int
	// QueueType (RabbitMQ) is the declared queue type; "" means classic.
	// A quorum subscription's wait queues and dead-letter queues are
	// quorum queues too.
	QueueType QueueType
	// DeliveryLimit (RabbitMQ, quorum queues) is how many times a message
	// of one attempt may come back unsettled (its worker crashed or lost
	// its connection while holding it) before it is parked, and the
	// queue's x-delivery-limit. 0 means the default; see CrashLimit and
	// DeliveryLimitInForce.
	DeliveryLimit int
	// SingleActiveConsumer (RabbitMQ) declares the queue with
	// x-single-active-consumer: one consumer at a time gets its messages,
	// the others stand by.
	SingleActiveConsumer bool
	// Exchange (RabbitMQ) is the exchange the queue is bound to, declared
	// durable at startup; "" means the queue takes only what is published
	// to it by name. Retry copies and dead letters never go through it:
	// they go queue to queue, so other queues bound to the exchange do not
	// see them.
	Exchange string
	// ExchangeType (RabbitMQ) is the type of Exchange; "" means
	// TopicExchange.
	ExchangeType ExchangeType
	// Bindings (RabbitMQ) are the binding keys the queue is bound to
	// Exchange with, one binding each: required for a topic or direct
	// exchange, refused for fanout.
	Bindings []string
	// BatchSize, when set, makes the subscription a batch subscription:
	// its one handler, made by HandleBatch, gets up to BatchSize messages
	// per call. Each message keeps its own attempt count, retry copy and
	// dead letter. 0 means one message per call.
	BatchSize int
	// BatchWait is how long a batch that is not full waits for more
	// messages before its handler is called; 0 means DefaultBatchWait.
	// It runs on the App's clock (WithClock).
	BatchWait time.Duration
	// Handlers are the handlers, one per message type.
	Handlers []Handler
	// Middleware wraps each handler call of this subscription, inside the
	// App's (WithMiddleware), in the order given; see Middleware.
	Middleware []Middleware
}

// Handler handles one message type of a subscription. Make one with Handle,
// HandleJSON or HandleBatch.
type Handler struct {
	// MessageType is the type name on the wire that selects this handler.
	MessageType string
	// Policy is the failure policy for this message type.
	Policy Policy
	// Codec is the codec its messages are written in, read besides the
	// App's (see Codecs), and what a body without a content type is read
	// with: the annotation's codec=, Protobuf for a protocol buffer
	// message (Handle sets it), nil for the App's codec alone.
	Codec Codec

	decode func(Codec, []byte) (any, error)
	// fn is the handler's function: a singleCall, called with one message
	// at a time, or a batchCall, called with a batch.
	fn handlerFunc
}

// Handle makes the Handler of messages of type messageType, decoded into a
// T and passed to fn. Generated code calls HandleJSON instead, which takes
// a handler of any shape.
func Handle[T any](messageType string, policy Policy, fn func(ctx context.Context, msg *T, md Metadata) Outcome) Handler {
	return Handler{
		Codec:       codecOf[T](),
		MessageType: messageType,
		Policy:      policy,
		decode:      decoderOf[T](nil),
		fn:          singleCall[T](fn),
	}
}

// HandleJSON is Handle for generated code: fn is a handler of any
// HandlerFunc shape, and decodeJSON, when not nil, is the JSON decoder
// streamgen wrote for T. A body read with JSON (the codec its content
// type names, see Handler.Codecs) is first decoded with decodeJSON, which either fills the value exactly as
// encoding/json would or reports false having met something it leaves to
// encoding/json (an escaped key, a number out of range, a syntax error,
// ...); then, and under any other codec, the body is decoded as Handle
// decodes it, into a new value. So the result, and any error, is always
// encoding/json's.
func HandleJSON[T any, F HandlerFunc[T]](messageType string, policy Policy, decodeJSON func(body []byte, v *T) bool, fn F) Handler {
	return Handler{
		Codec:       codecOf[T](),
		MessageType: messageType,
		Policy:      policy,
		decode:      decoderOf(decodeJSON),
		fn:          handlerFuncOf[T](messageType, fn),
	}
}

// decoderOf returns the decode function of a Handler of T: the codec
// decodes a body into a new T, after decodeJSON, when not nil, had the
// first go at it under the JSON codec (see HandleJSON).
func decoderOf[T any](decodeJSON func(body []byte, v *T) bool) func(Codec, []byte) (any, error) {
	decode := func(c Codec, body []byte) (any, error) {
		v := new(T)
		if err := c.Decode(body, v); err != nil {
			return nil, err
		}
		return v, nil
	}
	if decodeJSON == nil {
		return decode
	}
	return func(c Codec, body []byte) (any, error) {
		if _, ok := c.(JSON); ok {
			if v := new(T); decodeJSON(body, v) {
				return v, nil
			}
		}
		return decode(c, body)
	}
}

// Workers returns how many deliveries a broker adapter hands its Consumer
// at once: Concurrency, or 1, the handler calls that may run at once. A
// batch subscription holds the messages of those calls and of the batch
// that fills meanwhile: (Concurrency+1)×BatchSize.
func (s *Subscription) Workers() int {
	n := max(s.Concurrency, 1)
	if s.BatchSize > 0 {
		return (n + 1) * s.BatchSize
	}
	return n
}

// Batch returns the most messages a handler call gets (BatchSize, or 1)
// and how long a batch that is not full waits for more.
func (s *Subscription) Batch() (size int, wait time.Duration) {
	if s.BatchSize < 1 {
		return 1, 0
	}
	if s.BatchWait <= 0 {
		return s.BatchSize, DefaultBatchWait
	}
	return s.BatchSize, s.BatchWait
}

// Handler returns the handler for messageType, or nil.
func (s *Subscription) Handler(messageType string) *Handler {
	for i := range s.Handlers {
		if s.Handlers[i].MessageType == messageType {
			return &s.Handlers[i]
		}
	}
	return nil
}

// Retries reports whether any handler allows more than one delivery.
func (s *Subscription) Retries() bool {
	for _, h := range s.Handlers {
		if h.Policy.Attempts() > 1 {
			return true
		}
	}
	return false
}

// PoisonDeadLetter is the dead-letter queue for messages that reach no
// handler (oversize, missing or unknown type): the first one a handler names,
// in the order the handlers were declared.
func (s *Subscription) PoisonDeadLetter() string {
	for _, h := range s.Handlers {
		if h.Policy.DeadLetter != "" {
			return h.Policy.DeadLetter
		}
	}
	return ""
}

// DeadLetters returns the distinct dead-letter queues the handlers name, in
// declaration order.
func (s *Subscription) DeadLetters() []string {
	var out []string
	for _, h := range s.Handlers {
		q := h.Policy.DeadLetter
		if q != "" && !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	return out
}

// QueueDeadLetter is where a RabbitMQ subscription's queue dead-letters
// what the broker gives up on (past the delivery limit, expired):
// PoisonDeadLetter, "" when the subscription has none.
func (s *Subscription) QueueDeadLetter() string { return s.PoisonDeadLetter() }

// minDeliveryLimit is the least delivery limit a quorum subscription gets
// by default, and the least crash limit of any subscription, so that one
// lost connection does not park a message.
const minDeliveryLimit = 2

// DeliveryLimitInForce returns the delivery limit of a quorum
// subscription's queue, x-delivery-limit: CrashLimit's value (DeliveryLimit
// when set, else the largest max_attempts of its handlers, at least
// minDeliveryLimit); 0 for a classic queue, which counts no redeliveries
// and refuses the argument.
//
// The broker parks (dead-letters) a message returned more often than the
// limit. The Consumer parks a message at the limit, one delivery earlier,
// so the broker's limit acts only should the worker die even while it
// parks one. A queue's arguments never change once it is declared; the
// value has stayed the same since queues were first declared with it.
func (s *Subscription) DeliveryLimitInForce() int {
	if s.QueueType != QuorumQueue {
		return 0
	}
	return s.deliveryLimit()
}

// CrashLimit returns how many times a message of a RabbitMQ subscription
// (ack=manual) may come back unsettled (its worker crashed, or lost its
// connection, while it held it) before the Consumer parks it without
// running its handler again: DeliveryLimit when set, else the largest
// max_attempts of its handlers, at least minDeliveryLimit (so that one
// lost connection never parks a message); 0 with ack=auto, where a crash
// loses what the worker held and nothing comes back.
//
// A message that comes back is set aside on the subscription's suspect
// queue (SuspectQueue) and handled alone from there, so that a crash while
// it runs counts against it and against no other message; see
// runtime/adapter.
func (s *Subscription) CrashLimit() int {
	if s.AutoAck {
		return 0
	}
	return s.deliveryLimit()
}

func (s *Subscription) deliveryLimit() int {
	if s.DeliveryLimit > 0 {
		return s.DeliveryLimit
	}
	limit := minDeliveryLimit
	for _, h := range s.Handlers {
		limit = max(limit, h.Policy.Attempts())
	}
	return limit
}

// SuspectQueueSuffix ends the name of a subscription's suspect queue.
const SuspectQueueSuffix = ".suspect"

// SuspectQueue returns the name of the queue where a RabbitMQ subscription
// (ack=manual) keeps the messages that came back after their worker died,
// each with its count of crashes, to be handled alone: the subscription's
// name and SuspectQueueSuffix, "jobs.suspect" for "jobs". It is "" with
// ack=auto, where nothing comes back.
func (s *Subscription) SuspectQueue() string {
	if s.AutoAck || s.Name == "" {
		return ""
	}
	return s.Name + SuspectQueueSuffix
}

// ValidationError is one rule a subscription breaks. Key names the
// annotation key at fault, so the generator can point at it.
type ValidationError struct {
	Subscription string
	// Handler is the index of the handler at fault, or -1 when the fault is
	// the subscription's.
	Handler int
	// Key is the annotation key at fault ("max_attempts", ...), or "".
	Key string
	// Msg says what is wrong and how to fix it.
	Msg string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("subscription %q: %s", e.Subscription, e.Msg)
}

// validationErrors is every rule a subscription breaks, each a
// *ValidationError that Unwrap returns.
type validationErrors []*ValidationError

func (es validationErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return "runtime: invalid subscription: " + strings.Join(msgs, "; ")
}

func (es validationErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Validate checks the subscription for the broker it runs on. It returns nil
// or an error listing every problem: its Unwrap() []error returns one
// *ValidationError per problem, in order (errors.As finds the first). The
// generator runs the same checks at generate time and points at the
// annotation key.
func (s *Subscription) Validate(kind BrokerKind) error {
	var errs validationErrors
	add := func(handler int, key, format string, args ...any) {
		errs = append(errs, &ValidationError{Subscription: s.Name, Handler: handler, Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	if s.Name == "" {
		add(-1, "", "the subscription has no name: write it first, as in //stream:subscriber \"jobs\"")
	}
	if s.Broker != AnyBroker && kind != AnyBroker && s.Broker != kind {
		add(-1, "broker", "written for %s but mounted on a %s broker: pass a %s broker to Mount", s.Broker, kind, s.Broker)
	}
	if len(s.Handlers) == 0 {
		add(-1, "", "no handlers: a subscription needs at least one")
	}
	seen := map[string]int{}
	for i, h := range s.Handlers {
		if h.MessageType == "" {
			add(i, "type", "a handler has no message type name")
		} else if j, dup := seen[h.MessageType]; dup {
			add(i, "type", "message type %q is handled twice (handlers %d and %d): give one of them another type=", h.MessageType, j+1, i+1)
		} else {
			seen[h.MessageType] = i
		}
		if h.Policy.MaxAttempts < 0 {
			add(i, "max_attempts", "max_attempts is %d: it counts deliveries, the first included, so it must be at least 1", h.Policy.MaxAttempts)
		}
		if h.Policy.MaxAttempts > retrycount.Max+1 {
			add(i, "max_attempts", "max_attempts is %d: a retry count is read up to %d, so it must be at most %d", h.Policy.MaxAttempts, retrycount.Max, retrycount.Max+1)
		}
		if h.Policy.DeadLetter != "" && h.Policy.DeadLetter == s.Name {
			add(i, "dead_letter", "dead_letter %q is the subscription's own queue: name another queue", h.Policy.DeadLetter)
		}
		if h.Policy.Timeout < 0 {
			add(i, "timeout", "timeout is %v: it must be a positive duration such as timeout=30s, or not set", h.Policy.Timeout)
		}
		if h.decode == nil || h.fn == nil {
			add(i, "", "handler for %q was not made with runtime.Handle", h.MessageType)
		}
	}
	for i, m := range s.Middleware {
		if m == nil {
			add(-1, "", "middleware %d of %d is nil", i+1, len(s.Middleware))
		}
	}
	for i, d := range s.RetryDelays {
		if d <= 0 {
			add(-1, "retry_delay", "retry_delay step %d is %v: each step must be a positive duration such as 10s", i+1, d)
		} else if i > 0 && d <= s.RetryDelays[i-1] {
			add(-1, "retry_delay", "retry_delay steps must increase: %s follows %s", annotvalue.FormatDuration(d), annotvalue.FormatDuration(s.RetryDelays[i-1]))
		}
	}
	if s.Prefetch < 0 {
		add(-1, "prefetch", "prefetch is %d: it must be 0 (the default) or more", s.Prefetch)
	}
	if s.Concurrency < 0 {
		add(-1, "concurrency", "concurrency is %d: it must be 0 (the default, 1) or more", s.Concurrency)
	}
	if s.MaxPayloadBytes < 0 {
		add(-1, "max_payload_bytes", "max_payload_bytes is %d: it must be 0 (no limit) or more", s.MaxPayloadBytes)
	}
	s.validateBatch(add)
	s.validateEvery(add)
	switch s.QueueType {
	case "", ClassicQueue, QuorumQueue:
	default:
		add(-1, "queue_type", "queue_type is %q: use classic or quorum", s.QueueType)
	}
	if s.DeliveryLimit < 0 {
		add(-1, "delivery_limit", "delivery_limit is %d: it must be 1 or more (or left out)", s.DeliveryLimit)
	}

	if kind != ZeroMQ {
		s.validateExchange(add)
		s.validatePrefetch(add)
	}

	switch kind {
	case RabbitMQ:
		s.validateRabbitMQ(add)
		s.validateRetry(add)
	case ZeroMQ:
		s.validateZeroMQ(add)
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// maxPrefetch is the largest prefetch RabbitMQ takes: basic.qos carries
// the prefetch count in 16 bits, so a larger one would reach the broker as
// its remainder modulo 65536.
const maxPrefetch = 1<<16 - 1

// validatePrefetch checks that the prefetch RabbitMQ is given fits
// basic.qos: Prefetch, or, when it is not set, the concurrency that raises
// the default to it.
func (s *Subscription) validatePrefetch(add func(int, string, string, ...any)) {
	switch {
	case s.Prefetch > maxPrefetch:
		add(-1, "prefetch", "prefetch is %d: RabbitMQ takes at most %d unsettled deliveries per consumer (basic.qos has 16 bits for it); set prefetch=%d or less", s.Prefetch, maxPrefetch, maxPrefetch)
	case s.BatchSize > 0 && s.Prefetch > 0 && s.Prefetch < s.BatchSize:
		add(-1, "batch_size", "batch_size=%d is above prefetch=%d: RabbitMQ holds back deliveries beyond the prefetch, so a batch could never fill; set prefetch=%d (twice batch_size, so that the next batch fills while one is handled) or remove prefetch, which then defaults to that, or lower batch_size", s.BatchSize, s.Prefetch, 2*s.BatchSize)
	case s.BatchSize > 0 && s.Prefetch == 0 && s.Workers() > maxPrefetch:
		add(-1, "batch_size", "batch_size=%d with concurrency %d raises the prefetch to %d (the batches being handled and the one filling), and RabbitMQ takes at most %d unsettled deliveries per consumer (basic.qos has 16 bits for it); lower batch_size or concurrency", s.BatchSize, max(s.Concurrency, 1), s.Workers(), maxPrefetch)
	case s.Prefetch == 0 && s.Concurrency > maxPrefetch:
		add(-1, "concurrency", "concurrency is %d, which raises the prefetch to %d, and RabbitMQ takes at most %d unsettled deliveries per consumer (basic.qos has 16 bits for it); set concurrency=%d or less, or set a prefetch of %d or less", s.Concurrency, s.Concurrency, maxPrefetch, maxPrefetch, maxPrefetch)
	}
}

// validateBatch checks a batch subscription: BatchSize and BatchWait, and
// that its one handler is a batch handler, and a batch handler's
// subscription a batch subscription.
func (s *Subscription) validateBatch(add func(int, string, string, ...any)) {
	if s.BatchSize < 0 {
		add(-1, "batch_size", "batch_size is %d: it must be 1 or more (or left out, for one message per call)", s.BatchSize)
	}
	if s.BatchWait < 0 {
		add(-1, "batch_wait", "batch_wait is %v: it must be a positive duration such as batch_wait=50ms, or not set", s.BatchWait)
	}
	if s.BatchWait != 0 && s.BatchSize == 0 {
		add(-1, "batch_wait", "batch_wait has no effect without batch_size: add batch_size=N or remove batch_wait")
	}
	batched := -1
	for i, h := range s.Handlers {
		if h.Batched() {
			batched = i
			break
		}
	}
	if len(s.Handlers) > 1 && (s.BatchSize > 0 || batched >= 0) {
		add(batched, "batch_size", "a batch subscription has one handler, and this one has %d: give the batch handler a queue of its own", len(s.Handlers))
		return
	}
	for i, h := range s.Handlers {
		switch {
		case h.Batched() && s.BatchSize == 0:
			add(i, "batch_size", "the handler for %q takes a batch, but the subscription sets no batch_size: add batch_size=N, the most messages a call gets, such as batch_size=100", h.MessageType)
		case !h.Batched() && s.BatchSize > 0:
			add(i, "batch_size", "batch_size is set, but the handler for %q takes one message: make it take a slice ([]%s), or remove batch_size", h.MessageType, h.MessageType)
		}
	}
}

func (s *Subscription) validateRabbitMQ(add func(int, string, string, ...any)) {
	for i, h := range s.Handlers {
		if h.Policy.OutRetry != "" {
			add(i, "out_retry", "out_retry is for zeromq: on rabbitmq retry copies wait in %s.retry; remove out_retry", s.Name)
		}
		if s.AutoAck && h.Policy.Attempts() > 1 {
			add(i, "max_attempts", "ack=auto is at-most-once and cannot retry: remove max_attempts or use ack=manual")
		}
		if s.AutoAck && h.Transactional() {
			add(i, "ack", "the handler for %q takes a *sql.Tx, to handle each message once, and ack=auto loses a message whose transaction has not committed when the worker stops: remove ack=auto (a message delivered again after its commit is acknowledged without calling the handler)", h.MessageType)
		}
	}
	if len(s.RetryDelays) > 0 && !s.Retries() {
		add(-1, "retry_delay", "retry_delay has no effect because no handler retries: set max_attempts to 2 or more, or remove retry_delay")
	}
	if s.DeliveryLimit > 0 && s.QueueType != QuorumQueue {
		add(-1, "delivery_limit", "delivery_limit is for quorum queues (RabbitMQ refuses x-delivery-limit on a classic queue): add queue_type=quorum or remove delivery_limit")
	}
	for _, q := range waitqueue.Of(s.Name, s.Retries(), s.RetryDelays) {
		for i, h := range s.Handlers {
			if h.Policy.DeadLetter == q.Name {
				add(i, "dead_letter", "dead_letter %q is the subscription's wait queue: name another queue", q.Name)
			}
		}
	}
	if sq := s.SuspectQueue(); sq != "" {
		for i, h := range s.Handlers {
			if h.Policy.DeadLetter == sq {
				add(i, "dead_letter", "dead_letter %q is the subscription's suspect queue, where messages that came back after a crash wait to be handled alone: name another queue", sq)
			}
		}
	}
}

func (s *Subscription) validateZeroMQ(add func(int, string, string, ...any)) {
	s.validateReplies(add)
	if len(s.RetryDelays) > 0 {
		add(-1, "retry_delay", "retry_delay is for rabbitmq: on zeromq return runtime.RetryAfter(d, err) from the handler; remove retry_delay")
	}
	if s.AutoAck {
		add(-1, "ack", "ack is for rabbitmq: zeromq has no acknowledgements; remove ack")
	}
	if s.QueueType != "" {
		add(-1, "queue_type", "queue_type is for rabbitmq; remove it")
	}
	if s.DeliveryLimit != 0 {
		add(-1, "delivery_limit", "delivery_limit is for rabbitmq quorum queues; remove it")
	}
	if s.SingleActiveConsumer {
		add(-1, "single_active_consumer", "single_active_consumer is for rabbitmq; remove it")
	}
	if s.Exchange != "" {
		add(-1, "exchange", "exchange is for rabbitmq: a zeromq subscription is bound by its name; remove exchange")
	}
	if s.ExchangeType != "" {
		add(-1, "exchange_type", "exchange_type is for rabbitmq; remove it")
	}
	if len(s.Bindings) > 0 {
		add(-1, "binding", "binding is for rabbitmq; remove it")
	}
	for i, h := range s.Handlers {
		switch {
		case h.Policy.Attempts() > 1 && h.Policy.OutRetry == "":
			add(i, "max_attempts", "max_attempts=%d needs a destination for the retry copies on zeromq: add out_retry=self (back into this bound queue) or out_retry=<queue>", h.Policy.MaxAttempts)
		case h.Policy.OutRetry != "" && h.Policy.Attempts() < 2:
			add(i, "out_retry", "out_retry sends retry copies, but without max_attempts there are none: add max_attempts=N (N ≥ 2) or remove out_retry")
		}
	}
	// A dead-letter queue that takes retry copies too mixes them with the
	// dead letters. The subscription's own queue is refused as a dead
	// letter already.
	for i, h := range s.Handlers {
		dl := h.Policy.DeadLetter
		if dl == "" || dl == s.Name {
			continue
		}
		for j, o := range s.Handlers {
			if o.Policy.OutRetry != dl {
				continue
			}
			where := "is also its out_retry"
			if j != i {
				where = fmt.Sprintf("is the out_retry of message type %q", o.MessageType)
			}
			add(i, "dead_letter", "dead_letter %q %s: retry copies and dead letters would mix in one queue; name another queue for dead_letter or for out_retry", dl, where)
			break
		}
	}
}
