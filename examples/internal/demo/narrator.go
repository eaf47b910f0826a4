package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
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

// The messages of runtime.Consumer.Settle that a Narrator turns into
// sentences.
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
type Narrator struct {
	out    *narratorOutput
	level  slog.Leveler
	hidden []string    // prefixes of messages not shown
	attrs  []slog.Attr // from WithAttrs, keys already prefixed
	prefix string      // open groups, "a.b."
}

// narratorOutput is what a Narrator and the handlers derived from it share.
type narratorOutput struct {
	mu    sync.Mutex
	w     io.Writer
	now   func() time.Time
	start time.Time
}

// NewNarrator returns a Narrator writing to w, timing lines with now (for
// example time.Now or a ScaledClock's Now). It shows records at level Info
// and above; WithLevel changes that.
func NewNarrator(w io.Writer, now func() time.Time) *Narrator {
	return &Narrator{out: &narratorOutput{w: w, now: now, start: now()}, level: slog.LevelInfo}
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

// Handle writes r as one line.
func (n *Narrator) Handle(_ context.Context, r slog.Record) error {
	for _, p := range n.hidden {
		if strings.HasPrefix(r.Message, p) {
			return nil
		}
	}
	var fields []field
	for _, a := range n.attrs {
		fields = appendField(fields, "", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		fields = appendField(fields, n.prefix, a)
		return true
	})
	n.out.mu.Lock()
	defer n.out.mu.Unlock()
	line := renderLine(n.out.now().Sub(n.out.start), r.Level, r.Message, fields)
	_, err := io.WriteString(n.out.w, line+"\n")
	return err
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
	if strings.HasPrefix(msg, "could not ") && strings.HasSuffix(msg, " the message") {
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
