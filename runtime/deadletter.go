package runtime

// Headers the runtime sets on the copies it makes. RetryCountHeader is on
// every retry copy; the HeaderDeadLetter headers explain a parked message:
// the runtime adds them to every copy it parks on a dead-letter queue, so
// a person reading that queue sees why each message is there.
const (
	// RetryCountHeader is the header in which every retry copy carries
	// how many times the message was retried before: absent or 0 on the
	// first delivery, 4 on the fifth. Brokers count attempts with it
	// (RabbitMQ also reads x-death, see runtime/rabbitmq). The value is
	// decimal text.
	RetryCountHeader = "x-retry-count"

	// HeaderDeadLetterReason is the handler's error text or the poison
	// cause, cut short to MaxReasonBytes.
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

	// HeaderReplays counts how often a parked message was replayed (package
	// runtime/deadletter sets it on each replay). Unlike the headers above,
	// a dead-letter copy keeps it: a message parked again after a replay
	// still shows how often it was replayed.
	HeaderReplays = "x-streamgen-replays"

	// MaxReasonBytes is the longest HeaderDeadLetterReason: a longer reason
	// is cut at a character boundary and ends with how many bytes were cut,
	// so that an error text of any size still fits a broker's headers (a
	// ZeroMQ header frame holds at most 64 KiB) and the message is parked,
	// not lost.
	MaxReasonBytes = 4 << 10
)
