package runtime

import "time"

// Properties are the properties a sender may set on a message, beside its
// body and headers (the publish option WithProperties sets them). They
// are carried as AMQP properties on RabbitMQ and as headers on ZeroMQ, and
// handlers see them in Metadata. Retry copies and dead letters keep them,
// except Expiration (adapter.Copy.Properties says what a copy carries).
type Properties struct {
	// CorrelationID ties a reply to its request.
	CorrelationID string
	// ReplyTo names where a reply goes, usually a queue.
	ReplyTo string
	// Priority is the message priority; on RabbitMQ it matters only on a
	// queue declared with x-max-priority.
	Priority uint8
	// Expiration (RabbitMQ) is a per-message TTL: the broker discards the
	// message when it has waited that long in a queue. 0 means none. It
	// is not kept on copies: in a wait queue it would expire the copy
	// before its retry.
	Expiration time.Duration
	// Timestamp is when the message was made; zero means now on RabbitMQ,
	// and none on ZeroMQ.
	Timestamp time.Time
	// AppID names the application that sent the message.
	AppID string
}
