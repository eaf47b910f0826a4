// Package headers holds the rules about message headers that every broker
// and every tool shares: which headers describe a delivery's past rather
// than the message, and how a header value reads as text.
package headers

import (
	"strconv"
	"strings"
	"time"
)

// FromPast reports whether the header name describes a past delivery of
// a message rather than the message itself, in any case: the retry count
// (x-retry-count), streamgen's dead-letter explanation (x-streamgen-*,
// but x-streamgen-replays, which counts replays and travels with the
// message), and the bookkeeping RabbitMQ writes about a message's stay in
// its queues (x-death, x-first-death-*, x-last-death-*, x-delivery-count,
// x-acquired-count).
//
// A copy the runtime sends (a retry, a dead letter) and a replayed dead
// letter leave these behind and set their own: RabbitMQ 4 ignores a
// republished x-death, 3.x can drop a copy whose republished x-death looks
// like a cycle, and a replay starts the message again at attempt 1.
func FromPast(name string) bool {
	if len(name) < 2 || name[0] != 'x' && name[0] != 'X' || name[1] != '-' {
		return false // most application headers: no allocation
	}
	n := strings.ToLower(name)
	switch {
	case n == "x-retry-count", n == "x-death", n == "x-delivery-count", n == "x-acquired-count":
		return true
	case n == "x-streamgen-replays":
		return false
	case strings.HasPrefix(n, "x-streamgen-"), strings.HasPrefix(n, "x-first-death-"), strings.HasPrefix(n, "x-last-death-"):
		return true
	}
	return false
}

// DeliveryCount reports whether the header name, in any case, is a count
// a broker keeps of a message's deliveries and changes while the message
// waits in a queue (x-delivery-count of RabbitMQ's quorum queues,
// x-acquired-count of RabbitMQ 4): not the message's. A dead letter's key
// leaves them out, and tools show them apart from its headers. (They are
// also FromPast.)
func DeliveryCount(name string) bool {
	return strings.EqualFold(name, "x-delivery-count") || strings.EqualFold(name, "x-acquired-count")
}

// Text renders a header value of a scalar type as text: a string or
// bytes as they are, a bool, an integer or a float in Go's shortest form,
// a time in RFC 3339 (UTC). ok is false for other values (tables, arrays,
// decimals, nil), which have no one text form.
func Text(v any) (s string, ok bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	case bool:
		return strconv.FormatBool(x), true
	case int8:
		return strconv.FormatInt(int64(x), 10), true
	case int16:
		return strconv.FormatInt(int64(x), 10), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	case uint8:
		return strconv.FormatUint(uint64(x), 10), true
	case uint16:
		return strconv.FormatUint(uint64(x), 10), true
	case uint32:
		return strconv.FormatUint(uint64(x), 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case time.Time:
		return x.UTC().Format(time.RFC3339), true
	}
	return "", false
}
