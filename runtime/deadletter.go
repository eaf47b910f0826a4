package runtime

import (
	"strconv"
	"time"
)

// Headers that explain a parked message. Every broker adapter adds them to
// the copy it publishes on a dead-letter queue, so a person reading that
// queue sees why each message is there.
const (
	// HeaderDeadLetterReason is the handler's error text or the poison cause.
	HeaderDeadLetterReason = "x-streamgen-reason"
	// HeaderDeadLetterSource is the subscription the message was parked from.
	HeaderDeadLetterSource = "x-streamgen-source"
	// HeaderDeadLetterAttempts is how many deliveries the message had.
	HeaderDeadLetterAttempts = "x-streamgen-attempts"
	// HeaderDeadLetterPoison is "true" when the message never reached a
	// handler (oversize, no or unknown type, undecodable body).
	HeaderDeadLetterPoison = "x-streamgen-poison"
	// HeaderDeadLetterTime is when it was parked, in RFC 3339 with
	// milliseconds, UTC.
	HeaderDeadLetterTime = "x-streamgen-parked-at"
)

// DeadLetterHeaders returns the explanation headers for a message parked
// from subscription by verdict v at time now.
func DeadLetterHeaders(subscription string, v Verdict, now time.Time) map[string]string {
	return map[string]string{
		HeaderDeadLetterReason:   v.Reason,
		HeaderDeadLetterSource:   subscription,
		HeaderDeadLetterAttempts: strconv.Itoa(v.Attempt),
		HeaderDeadLetterPoison:   strconv.FormatBool(v.Poison),
		HeaderDeadLetterTime:     now.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
	}
}
