package adapter

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/internal/headers"
	"github.com/streamgen/streamgen/runtime/internal/messageid"
)

// CopyKind says what a copy is for.
type CopyKind uint8

const (
	// RetryCopy is a message sent again for another attempt.
	RetryCopy CopyKind = iota + 1
	// DeadLetterCopy is a message parked on a dead-letter queue.
	DeadLetterCopy
	// SuspectCopy is a message that came back after its worker died, set
	// aside on the subscription's suspect queue with its count of crashes
	// (HeaderCrashes), to be handled alone.
	SuspectCopy
	// ReleaseCopy is a message not started before shutdown, sent back to
	// the subscription's own queue as the same attempt, on a queue that
	// retries by itself (Consumer.UseBrokerRetry), where a message handed
	// back would count as a retry.
	ReleaseCopy
)

func (k CopyKind) String() string {
	switch k {
	case RetryCopy:
		return "retry copy"
	case DeadLetterCopy:
		return "dead letter"
	case SuspectCopy:
		return "suspect copy"
	case ReleaseCopy:
		return "released copy"
	}
	return "copy"
}

// HeaderCrashes is the header in which a suspect copy carries how many
// times the message came back unsettled: its worker crashed, or lost its
// connection, while holding it (see Consumer.Handle). The value is decimal
// text. Like every x-streamgen- header it describes the message's past,
// so no other copy carries it: a retry starts the count again, and a dead
// letter says it in its reason.
const HeaderCrashes = "x-streamgen-crashes"

// Header is one header of a copy.
type Header struct {
	Name, Value string
}

// Copy is a message the Consumer sends on: the body and properties of the
// original delivery, with the header changes below. The adapter applies
// them to its own form of the original (Delivery.Raw) and publishes the
// result to Queue; it adds and removes nothing else.
type Copy struct {
	Kind CopyKind
	// Queue is the destination: a RabbitMQ wait queue or dead-letter
	// queue, or a ZeroMQ subscription.
	Queue string
	// MessageID is the copy's message id: the original's, or a fresh one
	// when it had none.
	MessageID string
	// Set are the headers the copy carries in addition to the original's
	// that Keep keeps, in name order, as the broker writes them: the
	// runtime's own, and those the App's Observer adds (a trace context,
	// observe.DeliveryObservation.CopyHeaders).
	Set []Header

	rules       Rules
	countHeader string // rules.RetryCountHeaderName(), worked out once
}

// Properties returns the message properties the copy carries, given the
// original's p: the same, but no Expiration. A TTL of the message's own
// would expire a retry copy in its wait queue before the retry, and a
// copy's stay in a queue is a new one. Every adapter builds its copies'
// properties with it.
func (c *Copy) Properties(p runtime.Properties) runtime.Properties {
	p.Expiration = 0
	return p
}

// Keep reports whether the copy carries the original's header name.
// Dropped are: the headers that describe the original's past deliveries
// (headers.FromPast: the retry count, which a retry copy sets anew, the
// x-streamgen-* dead-letter explanation, which a dead letter gets anew,
// and the broker's bookkeeping), the retry count under the name the
// subscription gives it, and any header Set replaces, each in any case.
func (c *Copy) Keep(name string) bool {
	count := c.countHeader
	if count == "" { // a Copy made outside this package
		count = c.rules.RetryCountHeaderName()
	}
	if headers.FromPast(name) || strings.EqualFold(name, count) {
		return false
	}
	for _, h := range c.Set {
		if strings.EqualFold(name, h.Name) {
			return false
		}
	}
	return true
}

// set sets header name to value in Set, in name order, replacing a header
// of that name in any case.
func (c *Copy) set(name, value string) {
	for i, h := range c.Set {
		if strings.EqualFold(h.Name, name) {
			c.Set[i] = Header{Name: name, Value: value}
			slices.SortFunc(c.Set, func(a, b Header) int { return strings.Compare(a.Name, b.Name) })
			return
		}
	}
	i, _ := slices.BinarySearchFunc(c.Set, name, func(h Header, n string) int { return strings.Compare(h.Name, n) })
	c.Set = slices.Insert(c.Set, i, Header{Name: name, Value: value})
}

// Headers returns the copy's text headers, made from the original's h.
func (c *Copy) Headers(h map[string]string) map[string]string {
	out := make(map[string]string, len(h)+len(c.Set))
	for k, v := range h {
		if c.Keep(k) {
			out[c.rules.headerName(k)] = v
		}
	}
	for _, s := range c.Set {
		out[s.Name] = s.Value
	}
	return out
}

// retryCopy is the copy of d sent for its next attempt: it carries d's
// attempt number as the retry count.
func (r Rules) retryCopy(d *Delivery, queue string) *Copy {
	name := r.RetryCountHeaderName()
	return &Copy{
		Kind:        RetryCopy,
		Queue:       queue,
		MessageID:   copyID(d),
		Set:         []Header{{Name: name, Value: strconv.Itoa(d.attempt)}},
		rules:       r,
		countHeader: name,
	}
}

// suspectCopy is the copy of d set aside on queue, the subscription's
// suspect queue, after it came back unsettled crashes times in all. It is
// the same attempt: it carries d's retry count (its attempt number less
// one) as the retry count header, so that the count the broker kept in
// x-death, which a copy leaves behind, is not lost.
func (r Rules) suspectCopy(d *Delivery, queue string, crashes int) *Copy {
	name := r.RetryCountHeaderName()
	cp := &Copy{
		Kind:        SuspectCopy,
		Queue:       queue,
		MessageID:   copyID(d),
		rules:       r,
		countHeader: name,
	}
	cp.set(r.headerName(HeaderCrashes), strconv.Itoa(crashes))
	if n := d.attempt - 1; n > 0 {
		cp.set(name, strconv.Itoa(n))
	}
	return cp
}

// releaseCopy is the copy of d sent back to queue, the subscription's own,
// at shutdown: the same attempt, so it carries d's retry count (its
// attempt number less one).
func (r Rules) releaseCopy(d *Delivery, queue string) *Copy {
	name := r.RetryCountHeaderName()
	cp := &Copy{Kind: ReleaseCopy, Queue: queue, MessageID: copyID(d), rules: r, countHeader: name}
	if n := d.attempt - 1; n > 0 {
		cp.set(name, strconv.Itoa(n))
	}
	return cp
}

// deadLetterCopy is the copy of d parked on v.Queue by subscription at
// now, with the headers that explain why.
func (r Rules) deadLetterCopy(d *Delivery, subscription string, v Verdict, now time.Time) *Copy {
	explain := DeadLetterHeaders(subscription, v, now)
	set := make([]Header, 0, len(explain))
	for _, k := range slices.Sorted(maps.Keys(explain)) {
		set = append(set, Header{Name: r.headerName(k), Value: r.headerValue(explain[k])})
	}
	return &Copy{Kind: DeadLetterCopy, Queue: v.Queue, MessageID: copyID(d), Set: set, rules: r, countHeader: r.RetryCountHeaderName()}
}

// copyID is the message id a copy of d carries. A message without one gets
// one, so that a returned or lost copy can be named.
func copyID(d *Delivery) string {
	if d.MessageID != "" {
		return d.MessageID
	}
	return messageid.New()
}

// DeadLetterHeaders returns the headers that explain a message parked from
// subscription by verdict v at time now (see runtime.HeaderDeadLetterReason
// and the constants after it).
func DeadLetterHeaders(subscription string, v Verdict, now time.Time) map[string]string {
	return map[string]string{
		runtime.HeaderDeadLetterReason:   shortReason(v.Reason),
		runtime.HeaderDeadLetterSource:   subscription,
		runtime.HeaderDeadLetterAttempts: strconv.Itoa(v.Attempt),
		runtime.HeaderDeadLetterPoison:   strconv.FormatBool(v.Poison),
		runtime.HeaderDeadLetterTime:     now.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
	}
}

// shortReason returns reason, cut to at most runtime.MaxReasonBytes at a
// character boundary, with a note of how much was cut.
func shortReason(reason string) string {
	if len(reason) <= runtime.MaxReasonBytes {
		return reason
	}
	const room = 40 // for the note
	cut := runtime.MaxReasonBytes - room
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes cut)", reason[:cut], len(reason)-cut)
}
