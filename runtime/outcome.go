package runtime

import (
	"errors"
	"time"
)

// action is what a handler asks the runtime to do with the message it got
// (see Outcome.Action).
type action uint8

const (
	// actionAck: the message is handled; acknowledge it.
	actionAck action = iota
	// actionRetry: the message failed; apply the subscription's retry policy.
	actionRetry
	// actionDeadLetter: the message can never succeed; park it on the
	// dead-letter queue now, skipping the remaining attempts.
	actionDeadLetter
	// actionDrop: forget the message now, with a warning.
	actionDrop
)

// The words Outcome.Action returns, indexed by action.
var actionNames = [...]string{actionAck: "ack", actionRetry: "retry", actionDeadLetter: "dead-letter", actionDrop: "drop"}

// Outcome is the explicit result of a handler. Handlers that return an error
// get the same outcomes through nil (Ack), a plain error (Retry) and the
// helpers RetryAfter, DeadLetter and Drop.
//
// The zero Outcome acknowledges.
type Outcome struct {
	action action
	delay  time.Duration
	err    error
}

// Ack reports success: the message is acknowledged.
func Ack() Outcome { return Outcome{action: actionAck} }

// Retry reports a failure; the subscription's policy decides whether the
// message is delivered again (and when), parked or dropped.
func Retry() Outcome { return Outcome{action: actionRetry} }

// DeadLetterNow parks the message on the dead-letter queue without using the
// remaining attempts. Without a dead-letter queue the message is rejected
// (RabbitMQ: nack without requeue) or dropped (ZeroMQ).
func DeadLetterNow() Outcome { return Outcome{action: actionDeadLetter} }

// DropNow forgets the message, with a warning naming it.
func DropNow() Outcome { return Outcome{action: actionDrop} }

// After asks for the next delivery no sooner than d from now. It only changes
// a Retry outcome. On RabbitMQ the delay is rounded up to a step of the
// subscription's retry_delay ladder; on ZeroMQ the copy waits d in memory.
func (o Outcome) After(d time.Duration) Outcome {
	if o.action == actionRetry && d > 0 {
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

// Action returns what the outcome asks for, in one word: "ack" (the
// message is handled: acknowledge it), "retry" (it failed: apply the
// subscription's retry policy), "dead-letter" (it can never succeed: park
// it now, skipping the remaining attempts) or "drop" (forget it now, with
// a warning).
func (o Outcome) Action() string { return actionNames[o.action] }

// Delay returns the delay asked for by After, or 0.
func (o Outcome) Delay() time.Duration { return o.delay }

// Err returns the reason given with Because, or the error the outcome was
// made from by OutcomeOf.
func (o Outcome) Err() error { return o.err }

func (o Outcome) String() string {
	s := o.Action()
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
		return e.outcome.Action()
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
