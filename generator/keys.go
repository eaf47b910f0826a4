package generator

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

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

// keySpec describes one annotation key.
type keySpec struct {
	name  string
	level keyLevel
	// only is the broker the key exists for; AnyBroker when it exists for
	// both. A key with only set makes a handler without broker= run on that
	// broker (see brokerFromKeys).
	only runtime.BrokerKind
	// example is a valid setting, shown in messages about the key.
	example string
}

// keySpecs lists every annotation key, in the order the documentation
// gives them.
func keySpecs() []keySpec {
	return []keySpec{
		{"broker", queueLevel, runtime.AnyBroker, "broker=rabbitmq"},
		{"max_attempts", typeLevel, runtime.AnyBroker, "max_attempts=5"},
		{"retry_delay", queueLevel, runtime.RabbitMQ, "retry_delay=10s"},
		{"dead_letter", typeLevel, runtime.AnyBroker, "dead_letter=jobs.dead"},
		{"out_retry", typeLevel, runtime.ZeroMQ, "out_retry=self"},
		{"type", typeLevel, runtime.AnyBroker, "type=Job"},
		{"ack", queueLevel, runtime.RabbitMQ, "ack=manual"},
		{"prefetch", queueLevel, runtime.AnyBroker, "prefetch=10"},
		{"concurrency", queueLevel, runtime.AnyBroker, "concurrency=4"},
		{"max_payload_bytes", queueLevel, runtime.AnyBroker, "max_payload_bytes=64KiB"},
		{"queue_type", queueLevel, runtime.RabbitMQ, "queue_type=quorum"},
		{"delivery_limit", queueLevel, runtime.RabbitMQ, "delivery_limit=20"},
		{"single_active_consumer", queueLevel, runtime.RabbitMQ, "single_active_consumer=true"},
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

// settings are the values of one annotation's keys, parsed. A key that is
// not set, or whose value is bad, keeps its zero value.
type settings struct {
	broker      runtime.BrokerKind
	maxAttempts int
	retryDelays []time.Duration
	deadLetter  string
	outRetry    string
	wireType    string
	ack         runtime.AckMode
	prefetch    int
	concurrency int
	maxPayload  byteSize
	queueType   runtime.QueueType
	// deliveryLimit and singleActive are delivery_limit and
	// single_active_consumer.
	deliveryLimit int
	singleActive  bool
}

// byteSize is a max_payload_bytes value as written: count × unit.
type byteSize struct {
	count int
	unit  int // 1, 1024 or 1024*1024
}

// bytes returns the size in bytes.
func (b byteSize) bytes() int { return b.count * b.unit }

// parseValue parses the value of one key into s. It returns a message that
// says what is wrong with the value and how to write it, or "".
func (s *settings) parseValue(key, value string) string {
	spec, _ := lookupKey(key)
	if value == "" {
		return fmt.Sprintf("%s has no value: write it as %s", key, spec.example)
	}
	switch key {
	case "broker":
		switch runtime.BrokerKind(value) {
		case runtime.RabbitMQ, runtime.ZeroMQ:
			s.broker = runtime.BrokerKind(value)
		default:
			return fmt.Sprintf("broker=%s is not a broker streamgen knows: use broker=rabbitmq or broker=zeromq", value)
		}
	case "max_attempts":
		n, msg := parsePositive(key, value, "a count of deliveries, the first included, such as max_attempts=5")
		if msg != "" {
			return msg
		}
		s.maxAttempts = n
	case "retry_delay":
		ds, err := runtime.ParseRetryDelays(value)
		if err != nil {
			return fmt.Sprintf("bad retry_delay: %v (a backoff ladder is a comma list such as retry_delay=1s,10s,1m)", err)
		}
		s.retryDelays = ds
	case "dead_letter":
		s.deadLetter = value
	case "out_retry":
		s.outRetry = value
	case "type":
		s.wireType = value
	case "ack":
		s.ack = runtime.AckMode(value)
	case "prefetch":
		n, msg := parsePositive(key, value, "how many unsettled deliveries the worker may hold, such as prefetch=10")
		if msg != "" {
			return msg
		}
		s.prefetch = n
	case "concurrency":
		n, msg := parsePositive(key, value, "how many handler calls may run at once, such as concurrency=4")
		if msg != "" {
			return msg
		}
		s.concurrency = n
	case "max_payload_bytes":
		b, msg := parseByteSize(value)
		if msg != "" {
			return msg
		}
		s.maxPayload = b
	case "queue_type":
		s.queueType = runtime.QueueType(value)
	case "delivery_limit":
		n, msg := parsePositive(key, value, "how many redeliveries of an unsettled message a quorum queue allows, such as delivery_limit=20")
		if msg != "" {
			return msg
		}
		s.deliveryLimit = n
	case "single_active_consumer":
		if value != "true" {
			return fmt.Sprintf("single_active_consumer=%s: write single_active_consumer=true, or leave it out", value)
		}
		s.singleActive = true
	}
	return ""
}

// parsePositive reads a whole number ≥ 1.
func parsePositive(key, value, what string) (int, string) {
	n, err := runtime.ParseCount(value)
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
// same setting (10s and 10000ms do; 64KiB and 65536 do).
func sameValue(key, a, b string) bool {
	if a == b {
		return true
	}
	var sa, sb settings
	if sa.parseValue(key, a) != "" || sb.parseValue(key, b) != "" {
		return false
	}
	switch key {
	case "retry_delay":
		if len(sa.retryDelays) != len(sb.retryDelays) {
			return false
		}
		for i := range sa.retryDelays {
			if sa.retryDelays[i] != sb.retryDelays[i] {
				return false
			}
		}
		return true
	case "max_payload_bytes":
		return sa.maxPayload.bytes() == sb.maxPayload.bytes()
	}
	return false
}
