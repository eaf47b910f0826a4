package rabbitmq

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/annotvalue"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// without returns args less the names.
func without(args amqp.Table, names []string) amqp.Table {
	out := amqp.Table{}
	for k, v := range args {
		if !slices.Contains(names, k) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// QueueNames returns the names of the queues a Broker declares for subs,
// each once, in the order it declares them: the subscriptions' queues, then
// their wait queues, then their dead-letter queues (adapter.Topology).
// Tools that create, inspect or delete those queues use it.
func QueueNames(subs ...*runtime.Subscription) []string {
	queues := adapter.Topology(subs, adapter.RabbitMQVersion{})
	names := make([]string, len(queues))
	for i, q := range queues {
		names[i] = q.Name
	}
	return names
}

// channelOpener opens a channel; *amqp091.Connection is one.
type channelOpener interface {
	Channel() (*amqp.Channel, error)
}

// declareTopology declares the queues subs need on conn, a connection to a
// broker of version v, as adapter.Topology gives them. Queues whose
// arguments differ from an existing queue's are reported together, as
// TopologyErrors, with two exceptions, each used as it is with a log line
// that says so:
//
//   - a consumed queue that exists with arguments a subscription does not
//     set (an operator's dead-letter exchange, a length limit...);
//   - a queue that lacks only arguments streamgen adds of its own accord
//     (adapter.Queue.Defaulted): declared by an earlier release, or by hand,
//     it keeps working as before, and the warning says what it misses and
//     how to add it.
//
// It returns the queues that exist without the delayed-retry arguments
// they are declared with (adapter.DelayedRetryArguments): declared before
// their subscription retried through them, they are used as they are, and
// their subscriptions retry through wait queues.
func declareTopology(conn channelOpener, subs []*runtime.Subscription, v serverVersion, log *slog.Logger) (lacksDelayedRetry map[string]bool, err error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: open a channel to declare queues: %w", err)
	}
	defer func() { _ = ch.Close() }()
	var errs []error
	delayedArgs := adapter.DelayedRetryArguments()
	for _, s := range adapter.Topology(subs, v.queues()) {
		args, defaulted := amqp.Table(s.Arguments), s.Defaulted
		var lacks []string
		own := false     // the queue has values of its own for them
		delayed := false // the queue lacks the delayed-retry arguments
		for {
			_, err := ch.QueueDeclare(s.Name, true, false, false, false, args)
			if err == nil {
				break
			}
			var ae *amqp.Error
			if !errors.As(err, &ae) || ae.Code != amqp.PreconditionFailed {
				return nil, fmt.Errorf("rabbitmq: declare %s %q: %w", s.Role, s.Name, err)
			}
			// A precondition failure closes the channel: reopen it.
			if ch, err = conn.Channel(); err != nil {
				return nil, fmt.Errorf("rabbitmq: reopen the channel to declare queues: %w", err)
			}
			mismatch := parseMismatch(ae.Reason)
			if !delayed && mismatch.wantSet && mismatch.have == "" && slices.Contains(delayedArgs, mismatch.argument) {
				// Declared before its subscription retried through it:
				// declare it again without them, which checks the rest.
				delayed = true
				args = without(args, delayedArgs)
				continue
			}
			if lacks == nil && mismatch.wantSet && slices.Contains(defaulted, mismatch.argument) {
				// Declared before streamgen added these, or by an operator
				// with values of their own: declare it again without them,
				// which checks every other argument.
				lacks, own = defaulted, mismatch.have != ""
				args = without(args, defaulted)
				continue
			}
			if s.Role == adapter.ConsumedRole && mismatch.argument != "" && !mismatch.wantSet && mismatch.argument != "durable" {
				// The queue has an argument we do not set: make sure it exists
				// and use it as the operator declared it.
				if _, err := ch.QueueDeclarePassive(s.Name, true, false, false, false, nil); err != nil {
					return nil, fmt.Errorf("rabbitmq: declare queue %q: %w", s.Name, err)
				}
				log.Info("rabbitmq: queue exists with an argument the subscription does not set; using it as declared",
					"queue", s.Name, "argument", mismatch.argument, "value", mismatch.have)
				break
			}
			errs = append(errs, newTopologyError(s, mismatch, ae))
			lacks = nil
			break
		}
		if delayed {
			if lacksDelayedRetry == nil {
				lacksDelayedRetry = map[string]bool{}
			}
			lacksDelayedRetry[s.Name] = true
			log.Info("rabbitmq: queue exists without the delayed-retry arguments; its subscription retries through wait queues, as before", "queue", s.Name,
				"lacks", strings.Join(delayedArgs, ","),
				"fix", "a queue's arguments never change: to have the queue wait out retries itself, stop its workers, move its messages to another queue, delete it, start the workers (which declare it with them) and move the messages back; or set retry=queue")
		}
		switch {
		case lacks != nil && own:
			log.Info("rabbitmq: "+s.Role.String()+" exists with dead-letter arguments of its own; using it as declared", "queue", s.Name,
				"instead_of", strings.Join(lacks, ","))
		case lacks != nil:
			log.Warn("rabbitmq: "+s.Role.String()+" exists without arguments streamgen now declares it with; using it as it is", "queue", s.Name,
				"lacks", strings.Join(lacks, ","), "so", lackingCost(s), "fix", lackingFix(s, lacks))
		}
	}
	return lacksDelayedRetry, errors.Join(errs...)
}

// lackingCost says what a queue declared without its defaulted arguments
// costs.
func lackingCost(s adapter.Queue) string {
	switch s.Role {
	case adapter.DeadLetterRole:
		return "RabbitMQ 4 gives it a delivery limit of 20: a letter read and handed back 20 times is dropped"
	case adapter.SuspectRole:
		return "RabbitMQ 4 gives it a delivery limit of 20: a message whose worker dies 20 times while setting it aside again is dropped"
	}
	return "a message the broker gives up on is dropped, not parked: the worker still parks a message handed back as often as the delivery limit, but should it crash even then, or should the message expire, the broker drops it"
}

// lackingFix says how to give a queue its defaulted arguments without
// deleting it: a policy, which applies to an existing queue.
func lackingFix(s adapter.Queue, lacks []string) string {
	def := map[string]any{}
	for _, name := range lacks {
		if name == "x-overflow" {
			continue // only with a length limit; the strategy needs it
		}
		def[strings.TrimPrefix(name, "x-")] = s.Arguments[name]
	}
	if _, ok := def["dead-letter-strategy"]; ok {
		def["overflow"] = "reject-publish"
	}
	js, _ := json.Marshal(def)
	return fmt.Sprintf("apply a policy to it, for example rabbitmqctl set_policy streamgen-%s '^%s$' '%s' --apply-to queues (a policy of the operator's own for it takes the place of this one), or move its messages elsewhere and delete it when empty so that it is declared again",
		s.Name, regexp.QuoteMeta(s.Name), js)
}

// TopologyError is a queue, or an exchange, that exists with other
// arguments than a subscription declares it with (the broker's 406
// PRECONDITION_FAILED). RabbitMQ never changes the arguments of an
// existing queue or the type of an exchange, so the Broker cannot start
// until it is deleted or the subscription is changed to match; Fix says
// how.
type TopologyError struct {
	// Queue is the queue's name, Role what it is for ("queue", "wait queue",
	// "dead-letter queue", or "exchange" when the error is an exchange's),
	// Subscription the subscription that declares it.
	Queue, Role, Subscription string
	// Exchange is the exchange's name when Role is "exchange"; Queue is
	// "" then.
	Exchange string
	// Argument is the argument that differs ("x-message-ttl", "durable"...),
	// or "" when the broker did not say.
	Argument string
	// Want is the value the subscription declares, Have the queue's, as
	// the broker wrote them: "" when not set, two single quotes
	// ('') when set to empty text.
	Want, Have string
	// Fix says what to do.
	Fix string
	// Err is the broker's error.
	Err error

	declared string // what the subscription declares, for a person
}

func newTopologyError(s adapter.Queue, m mismatch, err *amqp.Error) *TopologyError {
	e := &TopologyError{
		Queue: s.Name, Role: s.Role.String(), Subscription: s.Subscription,
		Argument: m.argument, Want: m.want, Have: m.have,
		Fix: fixFor(s, m), Err: err,
	}
	if s.Role == adapter.WaitRole && m.argument == "x-message-ttl" {
		e.declared = "retry_delay is " + annotvalue.FormatDuration(s.TTL)
	} else {
		e.declared = fmt.Sprintf("subscription %s declares it with %s", s.Subscription, argText(m.argument, m.want))
	}
	return e
}

func (e *TopologyError) Error() string {
	if e.Exchange != "" {
		if e.Argument == "" {
			return fmt.Sprintf("rabbitmq: exchange %s (subscription %s) exists with other arguments than it is declared with (%v): %s", e.Exchange, e.Subscription, e.Err, e.Fix)
		}
		return fmt.Sprintf("rabbitmq: exchange %s exists with %s %s but %s: %s", e.Exchange, e.Argument, e.Have, e.declared, e.Fix)
	}
	if e.Argument == "" {
		return fmt.Sprintf("rabbitmq: %s %s (subscription %s) exists with other arguments than it is declared with (%v): %s", e.Role, e.Queue, e.Subscription, e.Err, e.Fix)
	}
	return fmt.Sprintf("rabbitmq: %s %s exists with %s but %s: %s", e.Role, e.Queue, argText(e.Argument, e.Have), e.declared, e.Fix)
}

func (e *TopologyError) Unwrap() error { return e.Err }

// argText writes an argument and its value for a person.
func argText(arg, value string) string {
	switch {
	case value == "":
		return arg + " not set"
	case arg == "x-message-ttl":
		return arg + " " + value + " ms"
	}
	return arg + " " + value
}

// fixFor says how to resolve a mismatch on s.
func fixFor(s adapter.Queue, m mismatch) string {
	deleteIt := fmt.Sprintf("delete it when empty (rabbitmqctl delete_queue %s)", s.Name)
	switch s.Role {
	case adapter.WaitRole:
		if m.argument == "x-message-ttl" {
			if ms, err := strconv.ParseInt(m.have, 10, 64); err == nil {
				return fmt.Sprintf("%s or keep retry_delay=%s", deleteIt, annotvalue.FormatDuration(time.Duration(ms)*time.Millisecond))
			}
		}
		switch m.argument {
		case "x-queue-type", "x-overflow", "x-dead-letter-strategy":
			if s.Arguments["x-queue-type"] == string(runtime.QuorumQueue) {
				return "the wait queues of a quorum subscription are quorum queues: " + deleteIt + " so that it is declared again as one"
			}
		}
		return deleteIt + " so that it is declared again; wait queue arguments are fixed when the queue is created"
	case adapter.DeadLetterRole:
		if m.argument == "x-queue-type" {
			return "a dead-letter queue is a quorum queue when the subscription's is: move its messages elsewhere and " + deleteIt + ", or name another dead_letter"
		}
		return deleteIt + " so that it is declared as a plain durable queue, or name another dead_letter"
	case adapter.SuspectRole:
		if m.argument == "x-queue-type" {
			return "a suspect queue is a quorum queue when the subscription's is: move its messages to the subscription's queue and " + deleteIt + " so that it is declared again"
		}
		return "a suspect queue has the subscription's queue type and single_active_consumer and nothing else: make single_active_consumer match, or move its messages to the subscription's queue and " + deleteIt + " so that it is declared again"
	}
	switch m.argument {
	case "x-queue-type":
		return "a queue's type never changes: move its messages elsewhere and " + deleteIt + ", or set queue_type to match"
	case "x-delivery-limit":
		if m.have != "" {
			return "a queue's arguments never change: set delivery_limit=" + m.have + " to match, or move its messages elsewhere and " + deleteIt
		}
		return "a queue's arguments never change: remove delivery_limit, or move its messages elsewhere and " + deleteIt
	case "x-single-active-consumer":
		return "a queue's arguments never change: make single_active_consumer match, or move its messages elsewhere and " + deleteIt
	case "x-delayed-retry-min", "x-delayed-retry-max":
		if ms, err := strconv.ParseInt(m.have, 10, 64); err == nil {
			return fmt.Sprintf("the queue waits out retries itself, for a delay fixed when it was declared: keep retry_delay=%s, or set retry=queue to retry through wait queues, or move its messages elsewhere and %s", annotvalue.FormatDuration(time.Duration(ms)*time.Millisecond), deleteIt)
		}
	case "durable":
		return "subscriptions consume durable queues: " + deleteIt
	}
	return deleteIt + " so that it is declared again"
}

// mismatch is what a 406 says about an inequivalent queue argument.
// Values are as TopologyError writes them: "" when not set, two single
// quotes when set to empty text.
type mismatch struct {
	argument string
	want     string // the value declared now
	wantSet  bool
	have     string // the existing queue's value
}

// inequivalentArg matches RabbitMQ's reason text, for example
// "PRECONDITION_FAILED - inequivalent arg 'x-message-ttl' for queue
// 'jobs.retry' in vhost '/': received '5000' but current is '10000'".
var inequivalentArg = regexp.MustCompile(`inequivalent arg '([^']*)' for queue '.*' in vhost '.*': received (.+) but current is (.+)$`)

// parseMismatch reads a 406 reason; a reason in another form yields an
// empty mismatch.
func parseMismatch(reason string) mismatch {
	m := inequivalentArg.FindStringSubmatch(reason)
	if m == nil {
		return mismatch{}
	}
	want, wantSet := argValue(m[2])
	have, _ := argValue(m[3])
	return mismatch{argument: m[1], want: want, wantSet: wantSet, have: have}
}

// argValueForm matches "the value 'quorum' of type 'longstr'".
var argValueForm = regexp.MustCompile(`^the value '(.*)' of type '[^']*'$`)

// argValue reads a value as RabbitMQ writes it in a 406 reason: none,
// 'text', or the value 'text' of type 'type'. It reports whether the value
// is set; a set empty value reads as two single quotes.
func argValue(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "none" {
		return "", false
	}
	if m := argValueForm.FindStringSubmatch(s); m != nil {
		s = m[1]
	} else {
		s = strings.TrimSuffix(strings.TrimPrefix(s, "'"), "'")
	}
	if s == "" {
		return "''", true
	}
	return s, true
}
