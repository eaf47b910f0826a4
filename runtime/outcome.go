package runtime

import (
	"errors"
	"strconv"
	"time"
)

// Action is what a handler asks the runtime to do with the message it got
// (see Outcome.Action). Its String is the word logs use: "ack", "retry",
// "dead-letter" or "drop".
type Action uint8

const (
	// ActionAck: the message is handled; acknowledge it.
	ActionAck Action = iota
	// ActionRetry: the message failed; apply the subscription's retry
	// policy.
	ActionRetry
	// ActionDeadLetter: the message can never succeed; park it on the
	// dead-letter queue now, skipping the remaining attempts.
	ActionDeadLetter
	// ActionDrop: forget the message now, with a warning.
	ActionDrop
)

// The words of the actions, indexed by Action.
var actionNames = [...]string{ActionAck: "ack", ActionRetry: "retry", ActionDeadLetter: "dead-letter", ActionDrop: "drop"}

// String returns the action in one word: "ack", "retry", "dead-letter" or
// "drop".
func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}

// MarshalText returns the action's word, so that a log or an encoding
// shows the word, not the number.
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// Outcome is the explicit result of a handler. Handlers that return an error
// get the same outcomes through nil (Ack), a plain error (Retry) and the
// helpers RetryAfter, DeadLetter and Drop.
//
// The zero Outcome acknowledges.
type Outcome struct {
	action Action
	delay  time.Duration
	err    error
	// duplicate marks the Ack of a message a *sql.Tx handler's inbox
	// recorded already.
	duplicate bool
	// reply is what a handler that replies (HandleReply) returned with its
	// Ack: a pointer to the reply value.
	reply any
}

// Ack reports success: the message is acknowledged.
func Ack() Outcome { return Outcome{action: ActionAck} }

// Retry reports a failure; the subscription's policy decides whether the
// message is delivered again (and when), parked or dropped.
func Retry() Outcome { return Outcome{action: ActionRetry} }

// DeadLetterNow parks the message on the dead-letter queue without using the
// remaining attempts. Without a dead-letter queue the message is rejected
// (RabbitMQ: nack without requeue) or dropped (ZeroMQ).
func DeadLetterNow() Outcome { return Outcome{action: ActionDeadLetter} }

// DropNow forgets the message, with a warning naming it.
func DropNow() Outcome { return Outcome{action: ActionDrop} }

// After asks for the next delivery no sooner than d from now. It only changes
// a Retry outcome. On RabbitMQ the delay is rounded up to a step of the
// subscription's retry_delay ladder; on ZeroMQ the copy waits d in memory.
func (o Outcome) After(d time.Duration) Outcome {
	if o.action == ActionRetry && d > 0 {
		o.delay = d
	}
	return o
}

// Because records why the handler chose this outcome; the reason appears in
// logs and in the headers of a parked message.
func (o Outcome) Because(err error) Outcome {
	o.err = err
	return o
}

// Action returns what the outcome asks for: ActionAck (the message is
// handled: acknowledge it), ActionRetry (it failed: apply the
// subscription's retry policy), ActionDeadLetter (it can never succeed:
// park it now, skipping the remaining attempts) or ActionDrop (forget it
// now, with a warning).
func (o Outcome) Action() Action { return o.action }

// Duplicate reports an Ack the runtime made, without calling the
// handler, for a message whose handler takes a *sql.Tx and whose id the
// inbox recorded already: the message was handled, and its transaction
// committed, on an earlier delivery. Middleware sees it as next's Outcome.
func (o Outcome) Duplicate() bool { return o.duplicate }

// Reply returns the reply a handler made by HandleReply returned with
// its Ack, for the Consumer that sends it to the request's reply_to (a
// pointer to the value); nil for any other outcome. Middleware that
// passes next's Outcome on passes the reply on with it.
func (o Outcome) Reply() any { return o.reply }

// Delay returns the delay asked for by After, or 0.
func (o Outcome) Delay() time.Duration { return o.delay }

// Err returns the reason given with Because, or the error the outcome was
// made from by OutcomeOf.
func (o Outcome) Err() error { return o.err }

func (o Outcome) String() string {
	s := o.action.String()
	if o.duplicate {
		s += " (a duplicate: handled before)"
	}
	if o.delay > 0 {
		s += " after " + o.delay.String()
	}
	if o.err != nil {
		s += ": " + o.err.Error()
	}
	return s
}

// outcomeError is an error that carries the outcome its handler asked for.
type outcomeError struct {
	outcome Outcome
}

func (e *outcomeError) Error() string {
	if e.outcome.err == nil {
		return e.outcome.action.String()
	}
	return e.outcome.err.Error()
}

func (e *outcomeError) Unwrap() error { return e.outcome.err }

// RetryAfter wraps err to ask for the next delivery no sooner than d from now
// (see Outcome.After). The attempt still counts against max_attempts.
func RetryAfter(d time.Duration, err error) error {
	return &outcomeError{outcome: Retry().After(d).Because(err)}
}

// DeadLetter wraps err to park the message now, skipping the remaining
// attempts: the message is poison and another try cannot help.
func DeadLetter(err error) error {
	return &outcomeError{outcome: DeadLetterNow().Because(err)}
}

// Drop wraps err to forget the message now, with a warning.
func Drop(err error) error {
	return &outcomeError{outcome: DropNow().Because(err)}
}

// OutcomeOf maps a handler's error to its outcome: nil acknowledges, an error
// made by RetryAfter, DeadLetter or Drop (wrapped or not) asks for that, and
// any other error is a failure the retry policy handles.
func OutcomeOf(err error) Outcome {
	if err == nil {
		return Ack()
	}
	var oe *outcomeError
	if errors.As(err, &oe) {
		o := oe.outcome
		o.err = err
		return o
	}
	return Retry().Because(err)
}
