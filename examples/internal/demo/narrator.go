package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// The attribute keys a Narrator puts in its columns rather than in the
// text. The runtime's Consumer logs with these keys, and the example
// handlers use the same ones.
const (
	keySubscription = "subscription"
	keyMessageID    = "message_id"
	keyAttempt      = "attempt"
	keyMaxAttempts  = "max_attempts"
)

// The messages of the records an adapter.Consumer logs as it settles a
// delivery, which a Narrator turns into sentences.
const (
	msgRetried  = "message will be retried"
	msgParked   = "message parked"
	msgDropped  = "message dropped"
	msgRejected = "message rejected without requeue"
	msgHandled  = "message handled"
)

// Narrator is a slog.Handler that writes each record as one line a person
// can follow:
//
//	 +30.0s  jobs            job-2     2/5  could not charge job 2: the payment gateway timed out
//	 +60.0s  jobs            job-2     2/5  retry: after 30s its copy went back into jobs (the payment gateway timed out)
//	+120.0s  jobs            job-3     5/5  DROPPED: failed on attempt 5 of 5: the card was declined
//
// The first column is the time since the Narrator was made, read from the
// clock it was given (a ScaledClock shows the time the runtime waits in).
// The next three come from the attributes subscription, message_id, attempt
// and max_attempts, which the runtime's Consumer sets on every record about
// a message. The runtime's records about retries, dead letters, drops and
// rejections become sentences; any other record is its message followed by
// its remaining attributes.
//
// A Narrator tells a message's story in the order it happened, although
// the runtime logs that a copy was sent only once the send has returned,
// by when the copy may already have been delivered and handled (ZeroMQ
// sends retry copies and dead letters itself). So a record about a copy
// waits, up to copyWait, until the record saying the copy was sent has
// been written: a record of attempt n+1 waits for the retry of attempt n,
// and a record on a dead-letter queue (see WithDeadLetterQueues) for the
// record that parked the message there.
type Narrator struct {
	out         *narratorOutput
	level       slog.Leveler
	hidden      []string    // prefixes of messages not shown
	deadLetters []string    // dead-letter queues whose records follow a park
	attrs       []slog.Attr // from WithAttrs, keys already prefixed
	prefix      string      // open groups, "a.b."
}

// copyWait bounds how long a record about a copy waits for the record that
// says the copy was sent (a copy left by an earlier run has none).
const copyWait = 2 * time.Second

// narratorOutput is what a Narrator and the handlers derived from it share.
type narratorOutput struct {
	mu       sync.Mutex
	w        io.Writer
	now      func() time.Time
	start    time.Time
	copyWait time.Duration
	// changed is closed, and replaced, each time a record has been taken
	// in; waiters watch it.
	changed chan struct{}
	// sent holds the copies said sent: a retry of attempt n as {message,
	// queue, n} for its queue and for its subscription, a dead letter as
	// {message, queue, 0}.
	sent map[copyKey]bool
	// settled counts, per subscription, the records of the runtime saying
	// how it settled a delivery.
	settled map[string]settledCount
}

// copyKey names one copy of a message: where it went and, for a retry
// copy, the attempt it is a retry of.
type copyKey struct {
	messageID, queue string
	attempt          int
}

// settledCount counts the settle records of one subscription: acks apart,
// as only a Narrator at debug level sees them.
type settledCount struct{ acked, other int64 }

// NewNarrator returns a Narrator writing to w, timing lines with now (for
// example time.Now or a ScaledClock's Now). It shows records at level Info
// and above; WithLevel changes that.
func NewNarrator(w io.Writer, now func() time.Time) *Narrator {
	return &Narrator{out: &narratorOutput{
		w: w, now: now, start: now(), copyWait: copyWait,
		changed: make(chan struct{}), sent: map[copyKey]bool{}, settled: map[string]settledCount{},
	}, level: slog.LevelInfo}
}

// WithDeadLetterQueues returns a Narrator sharing n's output that knows
// queues as dead-letter queues: a record about a message there waits for
// the record that parked the message there.
func (n *Narrator) WithDeadLetterQueues(queues ...string) *Narrator {
	c := *n
	c.deadLetters = append(slices.Clone(n.deadLetters), queues...)
	return &c
}

// Printf writes text between the narrator's lines, never inside one.
func (n *Narrator) Printf(format string, args ...any) {
	n.out.mu.Lock()
	defer n.out.mu.Unlock()
	fmt.Fprintf(n.out.w, format, args...)
}

// CaughtUp waits until n has written the record of every delivery m counts
// as settled (the runtime counts a delivery just before it logs how it
// settled it), so that what a demo writes next comes after those lines.
// It returns an error when ctx ends first.
func (n *Narrator) CaughtUp(ctx context.Context, stats func() []runtime.SubscriptionStats) error {
	withAcks := n.Enabled(ctx, slog.LevelDebug)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		n.out.mu.Lock()
		behind, changed := "", n.out.changed
		for _, s := range stats() {
			told, want := n.out.settled[s.Subscription], settledCount{other: s.Retried + s.Parked + s.Rejected + s.Dropped + s.Failed}
			if withAcks {
				want.acked = s.Acked
			} else {
				told.acked = 0
			}
			if told != want {
				behind = s.Subscription
				break
			}
		}
		n.out.mu.Unlock()
		if behind == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo: the narration of %s did not catch up with its counters: %w", behind, context.Cause(ctx))
		case <-changed:
		case <-tick.C:
		}
	}
}

// WithLevel returns a Narrator sharing n's output that shows records at
// level and above.
func (n *Narrator) WithLevel(level slog.Leveler) *Narrator {
	c := *n
	c.level = level
	return &c
}

// Hiding returns a Narrator sharing n's output that does not show records
// whose message starts with one of prefixes, such as a notice the demo's
// reader does not need.
func (n *Narrator) Hiding(prefixes ...string) *Narrator {
	c := *n
	c.hidden = append(slices.Clone(n.hidden), prefixes...)
	return &c
}

// Enabled reports whether level is shown.
func (n *Narrator) Enabled(_ context.Context, level slog.Level) bool {
	return level >= n.level.Level()
}

// Handle writes r as one line, once the record saying that the copy r is
// about was sent has been written.
func (n *Narrator) Handle(_ context.Context, r slog.Record) error {
	var fields []field
	for _, a := range n.attrs {
		fields = appendField(fields, "", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		fields = appendField(fields, n.prefix, a)
		return true
	})
	o := n.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if copied, ok := n.copyOf(fields); ok {
		o.waitFor(copied)
	}
	o.note(r.Message, fields)
	for _, p := range n.hidden {
		if strings.HasPrefix(r.Message, p) {
			return nil
		}
	}
	line := renderLine(o.now().Sub(o.start), r.Level, r.Message, fields)
	_, err := io.WriteString(o.w, line+"\n")
	return err
}

// copyOf returns the copy a record is about, when it is about one: a
// delivery after the first (a retry copy), or one on a dead-letter queue.
func (n *Narrator) copyOf(fields []field) (copyKey, bool) {
	id, sub := lookup(fields, keyMessageID), lookup(fields, keySubscription)
	attempt, _ := strconv.Atoi(lookup(fields, keyAttempt))
	switch {
	case id == "":
		return copyKey{}, false
	case attempt > 1:
		return copyKey{id, sub, attempt - 1}, true
	case attempt == 1 && slices.Contains(n.deadLetters, sub):
		return copyKey{id, sub, 0}, true
	}
	return copyKey{}, false
}

// waitFor waits, o.mu held, until the copy k is said sent, or o.copyWait
// has passed.
func (o *narratorOutput) waitFor(k copyKey) {
	if o.sent[k] {
		return
	}
	timeout := time.NewTimer(o.copyWait)
	defer timeout.Stop()
	for !o.sent[k] {
		changed := o.changed
		o.mu.Unlock()
		select {
		case <-changed:
		case <-timeout.C:
			o.mu.Lock()
			return
		}
		o.mu.Lock()
	}
}

// note takes in a record, o.mu held: a copy it says was sent, a delivery
// it says was settled. Then it wakes the waiters.
func (o *narratorOutput) note(msg string, fields []field) {
	id, sub := lookup(fields, keyMessageID), lookup(fields, keySubscription)
	attempt, _ := strconv.Atoi(lookup(fields, keyAttempt))
	count := o.settled[sub]
	switch {
	case msg == msgHandled:
		count.acked++
	case msg == msgRetried:
		count.other++
		// On ZeroMQ the copy goes to via, on RabbitMQ through the wait
		// queue via back to the subscription.
		o.sent[copyKey{id, lookup(fields, "via"), attempt}] = true
		o.sent[copyKey{id, sub, attempt}] = true
	case msg == msgParked:
		count.other++
		o.sent[copyKey{id, lookup(fields, "dead_letter"), 0}] = true
	case msg == msgDropped, msg == msgRejected, isNotSettled(msg):
		count.other++
	}
	o.settled[sub] = count
	close(o.changed)
	o.changed = make(chan struct{})
}

// isNotSettled reports whether msg is the runtime's record of a verdict it
// could not carry out ("could not retry the message").
func isNotSettled(msg string) bool {
	return strings.HasPrefix(msg, "could not ") && strings.HasSuffix(msg, " the message")
}

// WithAttrs returns a Narrator that adds attrs to every record.
func (n *Narrator) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *n
	c.attrs = slices.Clone(n.attrs)
	for _, a := range attrs {
		a.Key = n.prefix + a.Key
		c.attrs = append(c.attrs, a)
	}
	return &c
}

// WithGroup returns a Narrator that prefixes the keys of later attributes
// with name and a dot.
func (n *Narrator) WithGroup(name string) slog.Handler {
	if name == "" {
		return n
	}
	c := *n
	c.prefix = n.prefix + name + "."
	return &c
}

// field is one attribute, its value as text.
type field struct{ key, value string }

// appendField appends a, flattening groups into dotted keys.
func appendField(fields []field, prefix string, a slog.Attr) []field {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range v.Group() {
			fields = appendField(fields, p, g)
		}
		return fields
	}
	if a.Key == "" {
		return fields
	}
	return append(fields, field{prefix + a.Key, v.String()})
}

// lookup returns the last value of key, as slog handlers let a later
// attribute win.
func lookup(fields []field, key string) string {
	for i := len(fields) - 1; i >= 0; i-- {
		if fields[i].key == key {
			return fields[i].value
		}
	}
	return ""
}

// renderLine writes one record: the columns, then the sentence.
func renderLine(elapsed time.Duration, level slog.Level, msg string, fields []field) string {
	try := lookup(fields, keyAttempt)
	if max := lookup(fields, keyMaxAttempts); try != "" && max != "" {
		try += "/" + max
	}
	return fmt.Sprintf("%8s  %-15s %-9s %4s  %s",
		fmt.Sprintf("%+.1fs", elapsed.Seconds()),
		lookup(fields, keySubscription), lookup(fields, keyMessageID), try,
		sentence(level, msg, fields))
}

// sentence says what a record reports.
func sentence(level slog.Level, msg string, fields []field) string {
	reason := lookup(fields, "reason")
	switch msg {
	case msgRetried:
		return retrySentence(lookup(fields, keySubscription), lookup(fields, "via"), lookup(fields, "delay"), reason)
	case msgParked:
		s := "PARKED on " + lookup(fields, "dead_letter") + ": " + reason
		if lookup(fields, "poison") == "true" {
			s += " (poison: it never reached a handler)"
		}
		return s
	case msgDropped:
		return "DROPPED: " + reason
	case msgRejected:
		return "REJECTED without requeue: " + reason
	case msgHandled:
		return "acked"
	}
	if isNotSettled(msg) {
		return "ERROR " + msg + ": " + reason + ": " + lookup(fields, "err")
	}
	var rest []string
	for _, f := range fields {
		switch f.key {
		case keySubscription, keyMessageID, keyAttempt, keyMaxAttempts, "stack":
			continue
		}
		rest = append(rest, f.key+"="+f.value)
	}
	s := msg
	if len(rest) > 0 {
		s += " (" + strings.Join(rest, ", ") + ")"
	}
	switch {
	case level >= slog.LevelError:
		return "error: " + s
	case level >= slog.LevelWarn:
		return "warning: " + s
	}
	return s
}

// retrySentence says where a retry copy went. On RabbitMQ it waits in a
// wait queue named after the subscription ("orders.retry.1s"); on ZeroMQ it
// waited in memory and was then sent to its out_retry queue, which the
// runtime names by the subscription's name for out_retry=self.
func retrySentence(subscription, via, delay, reason string) string {
	after := "after " + delay + " its copy went"
	if delay == "" || delay == "0s" {
		after = "its copy went at once"
	}
	var s string
	switch {
	case strings.HasPrefix(via, subscription+".retry"):
		s = fmt.Sprintf("retry: a copy waits %s in %s", delay, via)
	case via == subscription:
		s = "retry: " + after + " back into " + subscription
	default:
		s = "retry: " + after + " to " + via
	}
	if reason != "" {
		s += " (" + reason + ")"
	}
	return s
}

// ColumnTitles returns the titles of a Narrator's columns, aligned with its
// lines.
func ColumnTitles() string {
	return fmt.Sprintf("%8s  %-15s %-9s %4s  %s", "time", "subscription", "message", "try", "what happened")
}
