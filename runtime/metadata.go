package runtime

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
	// Properties are the message properties the sender set (see the
	// runtime.With... publish options); zero when it set none. A retry
	// copy has no Expiration.
	Properties
	// Raw is the broker adapter's own delivery value.
	Raw any
	// Batch is, in the Metadata middleware sees around a batch call, the
	// Metadata of each message of the batch, in order; that Metadata
	// names the subscription, message type and MaxAttempts, and no
	// message. It is nil for a call with one message.
	Batch []Metadata
}
