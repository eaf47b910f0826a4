package generator

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/streamgen/streamgen/internal/annotvalue"
	"github.com/streamgen/streamgen/runtime"
)

// keyLevel says whether an annotation key configures the whole subscription
// or the one message type its handler takes.
type keyLevel uint8

const (
	// queueLevel keys apply to the whole subscription: when several handlers
	// set one, they must agree.
	queueLevel keyLevel = iota
	// typeLevel keys belong to their handler's message type.
	typeLevel
)

// outRetrySelf is the out_retry value that sends ZeroMQ retry copies back
// into the subscription's own bound queue: runtimeSubscription writes the
// subscription's name in its place.
const outRetrySelf = "self"

// keySpec describes one annotation key: the field of runtime.Subscription,
// or of the handler's runtime.Handler, that it sets. This table is the one
// place where keys map to fields: validation, Mount's Subscription literal
// and the AsyncAPI document all read the runtime.Subscription the keys
// build.
type keySpec struct {
	name  string
	level keyLevel
	// only is the broker the key exists for; AnyBroker when it exists for
	// both. A key with only set makes a handler without broker= run on that
	// broker (see brokerFromKeys).
	only runtime.BrokerKind
	// example is a valid setting, shown in messages about the key.
	example string
	// doc is what the annotation reference (docs/annotations.md) and the
	// key list of this package's documentation say of the key.
	doc keyDoc
	// set parses a value (not "") into the key's field: of sub for a
	// queue-level key, of h for a type-level key. It returns a message that
	// says what is wrong with the value and how to write it, or "" when
	// the field was set.
	set func(sub *runtime.Subscription, h *runtime.Handler, value string) string
	// alternative is a valid value other than "not set" for a key whose
	// value the cross-key rules of Validate read, or "" (see
	// independentOfBadValues).
	alternative string
}

// keyDoc documents an annotation key for its reader: the annotation
// reference, docs/annotations.md, is written from it (keydoc.go; make docs),
// with the key's brokers and level, which keySpec says. Each text is
// Markdown on one line.
type keyDoc struct {
	// summary says what the key sets, in a phrase that begins in lower case.
	summary string
	// values are the values the key takes.
	values string
	// dflt is what a subscription without the key gets.
	dflt string
	// guide links the page of docs/ (with an #anchor when it helps) that
	// tells more about what the key sets: [title](page.md#anchor).
	guide string
}

// keySpecs lists every annotation key, in the order the documentation
// gives them.
func keySpecs() []keySpec {
	return []keySpec{
		{"broker", queueLevel, runtime.AnyBroker, "broker=rabbitmq", keyDoc{
			summary: "the broker the subscription runs on",
			values:  "`rabbitmq`, `zeromq`",
			dflt:    "the package's, when every `broker=` in it names the same one; else the broker its broker-specific keys exist for; else the broker it is mounted on",
			guide:   "[Which broker](annotations.md#which-broker)",
		}, func(sub *runtime.Subscription, _ *runtime.Handler, v string) string {
			switch runtime.BrokerKind(v) {
			case runtime.RabbitMQ, runtime.ZeroMQ:
				sub.Broker = runtime.BrokerKind(v)
				return ""
			}
			return fmt.Sprintf("broker=%s is not a broker streamgen knows: use broker=rabbitmq or broker=zeromq", v)
		}, ""},
		{"max_attempts", typeLevel, runtime.AnyBroker, "max_attempts=5", keyDoc{
			summary: "deliveries of one message, the first included",
			values:  "a whole number ≥ 1",
			dflt:    "1 (no retry)",
			guide:   "[Retries and dead letters](retries.md)",
		}, func(_ *runtime.Subscription, h *runtime.Handler, v string) string {
			return setPositive(&h.Policy.MaxAttempts, "max_attempts", v, "a count of deliveries, the first included, such as max_attempts=5")
		}, "2"},
		{"retry_delay", queueLevel, runtime.RabbitMQ, "retry_delay=10s", keyDoc{
			summary: "how long a retry waits, in the wait queue (or, with the queue's own retry, in the quorum queue); a comma list is a backoff ladder",
			values:  "a Go duration (`500ms`, `10s`, `1m`), or increasing steps `1s,10s,1m`",
			dflt:    "`" + annotvalue.FormatDuration(runtime.DefaultRetryDelay) + "` when the queue retries",
			guide:   "[Retries on RabbitMQ](retries.md#on-rabbitmq)",
		}, func(sub *runtime.Subscription, _ *runtime.Handler, v string) string {
			ds, err := annotvalue.ParseRetryDelays(v)
			if err != nil {
				return fmt.Sprintf("bad retry_delay: %v (a backoff ladder is a comma list such as retry_delay=1s,10s,1m)", err)
			}
			sub.RetryDelays = ds
			return ""
		}, annotvalue.FormatDuration(runtime.DefaultRetryDelay)},
		{"retry", queueLevel, runtime.RabbitMQ, "retry=broker", keyDoc{
			summary: "who waits out a retry's delay: the quorum queue itself (RabbitMQ 4.3 delayed retry: no copy, no wait queue) or wait queues",
			values:  "`broker` (needs `queue_type=quorum` and one `retry_delay`), `queue`",
			dflt:    "the queue itself where it can (a quorum queue on RabbitMQ 4.3 or later, one delay), else wait queues",
			guide:   "[The queue's own retry](retries.md#the-queues-own-retry-rabbitmq-43)",
		}, func(sub *runtime.Subscription, _ *runtime.Handler, v string) string {
			switch p := runtime.RetryPath(v); p {
			case runtime.RetryBroker, runtime.RetryQueue:
				sub.Retry = p
				return ""
			}
			return fmt.Sprintf("retry=%s is not a retry path: use retry=broker (the quorum queue waits out the delay, RabbitMQ 4.3 and later) or retry=queue (wait queues)", v)
		}, "queue"},
		{"dead_letter", typeLevel, runtime.AnyBroker, "dead_letter=jobs.dead", keyDoc{
			summary: "the queue that takes exhausted and poison messages",
			values:  "a queue name other than the subscription's own and its wait queues",
			dflt:    "none: exhausted messages are dropped with a warning",
			guide:   "[Retries and dead letters](retries.md)",
		}, func(_ *runtime.Subscription, h *runtime.Handler, v string) string {
			h.Policy.DeadLetter = v
			return ""
		}, "\x00dead letter"},
		{"out_retry", typeLevel, runtime.ZeroMQ, "out_retry=self", keyDoc{
			summary: "where retry copies go",
			values:  "`self` (back into this bound queue) or a queue name",
			dflt:    "none; required with `max_attempts` ≥ 2",
			guide:   "[Retries on ZeroMQ](retries.md#on-zeromq)",
		}, func(_ *runtime.Subscription, h *runtime.Handler, v string) string {
			h.Policy.OutRetry = v
			return ""
		}, outRetrySelf},
		{"type", typeLevel, runtime.AnyBroker, "type=Job", keyDoc{
			summary: "the message type name on the wire; it picks the handler",
			values:  "any name",
			dflt:    "the Go type's name",
			guide:   "[Handlers and outcomes](handlers.md)",
		}, func(_ *runtime.Subscription, h *runtime.Handler, v string) string {
			h.MessageType = v
			return ""
		}, ""},
		{"codec", typeLevel, runtime.AnyBroker, "codec=msgpack", keyDoc{
			summary: "the codec the message type is written in: its handler reads it besides the App's codec, each delivery by its content type, its generated publisher and typed client write it, and a reply goes back in the codec its request came in",
			values:  "`json`, `protobuf`, `msgpack`, `cbor`",
			dflt:    "the App's codec (JSON unless `runtime.WithCodec`); `protobuf` for a protocol buffer message",
			guide:   "[Codecs](codecs.md)",
		}, func(_ *runtime.Subscription, h *runtime.Handler, v string) string {
			c, msg := parseCodec(v)
			if msg == "" {
				h.Codec = c
			}
			return msg
		}, ""},
		{"ack", queueLevel, runtime.RabbitMQ, "ack=auto", keyDoc{
			summary: "when a delivery is acknowledged",
			values:  "`manual`, `auto` (at-most-once, no retries)",
			dflt:    "`manual`",
			guide:   "[RabbitMQ operational caveats](operating.md#rabbitmq-operational-caveats)",
		}, func(sub *runtime.Subscription, _ *runtime.Handler, v string) string {
			switch v {
			case "manual", "auto":
				sub.AutoAck = v == "auto"
				return ""
			}
			return fmt.Sprintf("ack is %q: use manual or auto", v)
		}, "auto"},
		{"prefetch", queueLevel, runtime.AnyBroker, "prefetch=10", keyDoc{
			summary: "deliveries held and not yet settled (RabbitMQ `basic.qos`; ZeroMQ: received messages waiting for a worker)",
			values:  "a whole number ≥ 1; at most 65535 on RabbitMQ, whose `basic.qos` carries 16 bits (refused at generate time and by `Validate` at startup, as is a `concurrency` above 65535 that raises the default to it)",
			dflt:    "RabbitMQ 20, raised to `concurrency`; ZeroMQ 16",
			guide:   "[Tuning prefetch and concurrency](annotations.md#tuning-prefetch-and-concurrency)",
		}, func(sub *runtime.Subscription, _ *runtime.Handler, v string) string {
			return setPositive(&sub.Prefetch, "prefetch", v, "how many unsettled deliveries the worker may hold, such as prefetch=10")
		}, ""},
		{"concurrency", queueLevel, runtime.AnyBroker, "concurrency=4", keyDoc{
			summary: "handler calls that run at once",
			values:  "a whole number ≥ 1",
			dflt:    "1",
			guide:   "[Tuning prefetch and concurrency](annotations.md#tuning-prefetch-and-concurrency)",
		}, func(sub *runtime.Subscription, _ *runtime.Handler, v string) string {
			return setPositive(&sub.Concurrency, "concurrency", v, "how many handler calls may run at once, such as concurrency=4")
		}, ""},
		{"max_payload_bytes", queueLevel, runtime.AnyBroker, "max_payload_bytes=64KiB", keyDoc{
			summary: "larger bodies are poison",
			values:  "bytes ≥ 1, optionally `64KiB` or `2MiB`",
			dflt:    "no limit",
			guide:   "[Poison](retries.md#poison)",
		}, func(sub *runtime.Subscription, _ *runtime.Handler, v string) string {
			b, msg := parseByteSize(v)
			if msg == "" {
				sub.MaxPayloadBytes = b.bytes()
			}
			return msg
		}, ""},
		{"queue_type", queueLevel, runtime.RabbitMQ, "queue_type=quorum", keyDoc{
			summary: "the declared queue type; with `quorum` its wait, suspect and dead-letter queues are quorum too",
			values:  "`classic`, `quorum`",
			dflt:    "`classic`",
			guide:   "[Running on a RabbitMQ cluster](rabbitmq-clusters.md)",
		}, func(sub *runtime.Subscription, _ *runtime.Handler, v string) string {
			sub.QueueType = runtime.QueueType(v)
			return ""
		}, ""},
		{"delivery_limit", queueLevel, runtime.RabbitMQ, "delivery_limit=20", keyDoc{
			summary: "how many times a message of one attempt may come back unsettled (its worker crashed or lost its connection while handling it) before it is parked on the dead-letter queue, or dropped without one; also the quorum queue's `x-delivery-limit`",
			values:  "a whole number ≥ 1, with `queue_type=quorum`",
			dflt:    "the largest `max_attempts`, at least 2 (on a classic queue too)",
			guide:   "[A message that crashes its worker](operating.md#a-message-that-crashes-its-worker)",
		}, func(sub *runtime.Subscription, _ *runtime.Handler, v string) string {
			return setPositive(&sub.DeliveryLimit, "delivery_limit", v, "how many redeliveries of an unsettled message a quorum queue allows, such as delivery_limit=20")
		}, ""},
		{"single_active_consumer", queueLevel, runtime.RabbitMQ, "single_active_consumer=true", keyDoc{
			summary: "one worker at a time gets the queue's messages; the others stand by (`x-single-active-consumer`)",
			values:  "`true`",
			dflt:    "not set",
			guide:   "[Quorum queues and single active consumer](operating.md#quorum-queues-and-single-active-consumer)",
		}, func(sub *runtime.Subscription, _ *runtime.Handler, v string) string {
			if v != "true" {
				return fmt.Sprintf("single_active_consumer=%s: write single_active_consumer=true, or leave it out", v)
			}
			sub.SingleActiveConsumer = true
			return ""
		}, ""},
		{"exchange", queueLevel, runtime.RabbitMQ, "exchange=orders", keyDoc{
			summary: "the exchange the queue is bound to, declared durable at startup",
			values:  "an exchange name",
			dflt:    "none: the queue takes what is published to it by name",
			guide:   "[Exchanges and routing keys](exchanges.md)",
		}, func(sub *runtime.Subscription, _ *runtime.Handler, v string) string {
			sub.Exchange = v
			return ""
		}, ""},
		{"exchange_type", queueLevel, runtime.RabbitMQ, "exchange_type=topic", keyDoc{
			summary: "the type of `exchange`",
			values:  "`topic`, `direct`, `fanout`",
			dflt:    "`topic`",
			guide:   "[Exchanges and routing keys](exchanges.md)",
		}, func(sub *runtime.Subscription, _ *runtime.Handler, v string) string {
			switch t := runtime.ExchangeType(v); t {
			case runtime.TopicExchange, runtime.DirectExchange, runtime.FanoutExchange:
				sub.ExchangeType = t
				return ""
			}
			return fmt.Sprintf("exchange_type=%s is not an exchange type: use exchange_type=topic (the default), direct or fanout", v)
		}, string(runtime.TopicExchange)},
		{"binding", queueLevel, runtime.RabbitMQ, "binding=order.placed", keyDoc{
			summary: "the binding keys the queue is bound with",
			values:  "a key or a comma list; topic patterns may use `*` (one word) and `#` (zero or more); required for topic and direct, refused for fanout",
			dflt:    "none",
			guide:   "[Exchanges and routing keys](exchanges.md)",
		}, func(sub *runtime.Subscription, _ *runtime.Handler, v string) string {
			sub.Bindings = parseBindings(v)
			return ""
		}, ""},
		{"batch_size", queueLevel, runtime.AnyBroker, "batch_size=100", keyDoc{
			summary: "the most messages one call of a batch handler gets; the handler takes a slice",
			values:  "a whole number ≥ 1, at most the RabbitMQ `prefetch`, whose default a batch subscription raises to (`concurrency`+1) × `batch_size`: the batches being handled and the one filling",
			dflt:    "not set: one message per call",
			guide:   "[Batch handlers](batch-handlers.md)",
		}, func(sub *runtime.Subscription, _ *runtime.Handler, v string) string {
			return setPositive(&sub.BatchSize, "batch_size", v, "the most messages a batch handler's call gets, such as batch_size=100")
		}, ""},
		{"batch_wait", queueLevel, runtime.AnyBroker, "batch_wait=50ms", keyDoc{
			summary: "how long a batch that is not full waits for more messages",
			values:  "a positive Go duration (`10ms`, `1s`)",
			dflt:    "`" + annotvalue.FormatDuration(runtime.DefaultBatchWait) + "`",
			guide:   "[Batch handlers](batch-handlers.md)",
		}, func(sub *runtime.Subscription, _ *runtime.Handler, v string) string {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Sprintf("bad batch_wait: %q is not a duration: write it as 50ms, 1s or 1m", v)
			}
			if d <= 0 {
				return fmt.Sprintf("batch_wait=%s: it must be a positive duration such as batch_wait=50ms; remove it for the default (%s)", v, annotvalue.FormatDuration(runtime.DefaultBatchWait))
			}
			sub.BatchWait = d
			return ""
		}, ""},
		{"timeout", typeLevel, runtime.AnyBroker, "timeout=30s", keyDoc{
			summary: "how long a handler call may run: its context is then cancelled, and a call that fails then has the reason `handler timed out after 30s`; a late ack counts, with a warning",
			values:  "a positive Go duration (`500ms`, `30s`, `1m`)",
			dflt:    "none",
			guide:   "[Middleware, timeouts and hooks](handlers.md#middleware-timeouts-and-hooks)",
		}, func(_ *runtime.Subscription, h *runtime.Handler, v string) string {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Sprintf("bad timeout: %q is not a duration: write it as 500ms, 10s, 1m or 1h", v)
			}
			if d <= 0 {
				return fmt.Sprintf("timeout=%s: it must be a positive duration such as timeout=30s; remove it for no timeout", v)
			}
			h.Policy.Timeout = d
			return ""
		}, ""},
	}
}

// keyNames lists the name of every annotation key, in the order of
// keySpecs.
func keyNames() []string {
	specs := keySpecs()
	names := make([]string, len(specs))
	for i, k := range specs {
		names[i] = k.name
	}
	return names
}

// lookupKey returns the description of an annotation key.
func lookupKey(name string) (keySpec, bool) {
	for _, k := range keySpecs() {
		if k.name == name {
			return k, true
		}
	}
	return keySpec{}, false
}

// fields are what the keys of an annotation set, parsed: the fields of the
// subscription (queue-level keys) and of its handler (type-level keys). A
// key that is not set, or whose value is bad, leaves its field at zero.
type fields struct {
	sub     runtime.Subscription
	handler runtime.Handler
}

// set parses the value of one key into its field. It returns a message
// that says what is wrong with the value and how to write it, or "".
func (f *fields) set(key, value string) string {
	spec, _ := lookupKey(key)
	if value == "" {
		return fmt.Sprintf("%s has no value: write it as %s", key, spec.example)
	}
	return spec.set(&f.sub, &f.handler, value)
}

// byteSize is a max_payload_bytes value as written: count × unit. Only
// the bytes reach the runtime; the unit is how Mount's literal writes them.
type byteSize struct {
	count int
	unit  int // 1, 1024 or 1024*1024
}

// bytes returns the size in bytes.
func (b byteSize) bytes() int { return b.count * b.unit }

// setPositive reads a whole number ≥ 1 into *n.
func setPositive(n *int, key, value, what string) string {
	v, msg := parsePositive(key, value, what)
	if msg == "" {
		*n = v
	}
	return msg
}

// parsePositive reads a whole number ≥ 1.
func parsePositive(key, value, what string) (int, string) {
	n, err := annotvalue.ParseCount(value)
	if err != nil {
		return 0, fmt.Sprintf("bad %s: %v; write %s", key, err, what)
	}
	if n < 1 {
		if key == "max_attempts" {
			return 0, "max_attempts=0 allows no delivery at all: it counts deliveries, the first included, so it must be at least 1 (remove it for a single delivery)"
		}
		return 0, fmt.Sprintf("%s=%d: it must be at least 1; write %s, or remove it for the default", key, n, what)
	}
	return n, ""
}

// parseByteSize reads a max_payload_bytes value: a whole number of bytes,
// optionally with the suffix KiB or MiB.
func parseByteSize(value string) (byteSize, string) {
	unit := 1
	digits := value
	switch {
	case strings.HasSuffix(value, "KiB"):
		unit, digits = 1<<10, strings.TrimSuffix(value, "KiB")
	case strings.HasSuffix(value, "MiB"):
		unit, digits = 1<<20, strings.TrimSuffix(value, "MiB")
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || n > math.MaxInt32/unit {
		return byteSize{}, fmt.Sprintf("bad max_payload_bytes: %q is not a size: write a number of bytes, optionally with KiB or MiB, such as max_payload_bytes=65536 or max_payload_bytes=64KiB", value)
	}
	if n < 1 {
		return byteSize{}, "max_payload_bytes=0 would make every message poison: it must be at least 1 (remove it for no limit)"
	}
	return byteSize{count: n, unit: unit}, ""
}

// sameValue reports whether two raw values of a queue-level key mean the
// same setting (10s and 10000ms do; 64KiB and 65536 do): they set the same
// field to the same value.
func sameValue(key, a, b string) bool {
	if a == b {
		return true
	}
	var fa, fb fields
	if fa.set(key, a) != "" || fb.set(key, b) != "" {
		return false
	}
	return reflect.DeepEqual(fa, fb)
}

// parseBindings reads a binding value: one key or a comma list, each
// trimmed of spaces. Empty keys are kept, for Validate to report.
func parseBindings(s string) []string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return parts
}
