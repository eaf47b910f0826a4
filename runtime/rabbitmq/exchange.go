package rabbitmq

import (
	"errors"
	"fmt"
	"regexp"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
)

// exchangeSpec is one exchange to declare (durable, not auto-deleted, not
// internal) and the bindings of the queues the subscriptions bind to it.
type exchangeSpec struct {
	name string
	kind runtime.ExchangeType
	// subscription is the first subscription that names the exchange.
	subscription string
	bindings     []bindingSpec
}

// bindingSpec binds queue to an exchange with key ("" on fanout).
type bindingSpec struct {
	queue, key string
}

// exchanges lists the exchanges subs bind their queues to, in the order
// they are first named, each with its bindings. Two subscriptions that
// declare one exchange with different types are an error.
func exchanges(subs []*runtime.Subscription) ([]exchangeSpec, error) {
	var out []exchangeSpec
	index := map[string]int{}
	for _, sub := range subs {
		if sub.Exchange == "" {
			continue
		}
		i, ok := index[sub.Exchange]
		if !ok {
			i = len(out)
			index[sub.Exchange] = i
			out = append(out, exchangeSpec{name: sub.Exchange, kind: sub.ExchangeKind(), subscription: sub.Name})
		}
		x := &out[i]
		if x.kind != sub.ExchangeKind() {
			return nil, fmt.Errorf("rabbitmq: subscriptions %s and %s declare exchange %s as %s and as %s: an exchange has one type, so give them the same exchange_type or another exchange",
				x.subscription, sub.Name, x.name, x.kind, sub.ExchangeKind())
		}
		if x.kind == runtime.FanoutExchange {
			x.bindings = append(x.bindings, bindingSpec{queue: sub.Name})
			continue
		}
		for _, k := range sub.Bindings {
			x.bindings = append(x.bindings, bindingSpec{queue: sub.Name, key: k})
		}
	}
	return out, nil
}

// declareExchanges declares specs on conn and binds their queues, which
// declareTopology declared. An exchange that exists with another type or
// durability is reported as a TopologyError, all of them together; its
// queues are not bound.
func declareExchanges(conn channelOpener, specs []exchangeSpec) error {
	if len(specs) == 0 {
		return nil
	}
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("rabbitmq: open a channel to declare exchanges: %w", err)
	}
	defer func() { _ = ch.Close() }()
	var errs []error
	for _, x := range specs {
		err := ch.ExchangeDeclare(x.name, string(x.kind), true, false, false, false, nil)
		if err != nil {
			var ae *amqp.Error
			if !errors.As(err, &ae) || ae.Code != amqp.PreconditionFailed {
				return fmt.Errorf("rabbitmq: declare exchange %q: %w", x.name, err)
			}
			// A precondition failure closes the channel: reopen it.
			if ch, err = conn.Channel(); err != nil {
				return fmt.Errorf("rabbitmq: reopen the channel to declare exchanges: %w", err)
			}
			errs = append(errs, newExchangeError(x, ae))
			continue
		}
		for _, b := range x.bindings {
			if err := ch.QueueBind(b.queue, b.key, x.name, false, nil); err != nil {
				return fmt.Errorf("rabbitmq: bind queue %q to exchange %q with key %q: %w", b.queue, x.name, b.key, err)
			}
		}
	}
	return errors.Join(errs...)
}

// inequivalentExchangeArg matches RabbitMQ's reason text for an exchange,
// for example "PRECONDITION_FAILED - inequivalent arg 'type' for exchange
// 'orders' in vhost '/': received 'topic' but current is 'fanout'".
var inequivalentExchangeArg = regexp.MustCompile(`inequivalent arg '([^']*)' for exchange '.*' in vhost '.*': received (.+) but current is (.+)$`)

// newExchangeError describes the 406 err got declaring x.
func newExchangeError(x exchangeSpec, err *amqp.Error) *TopologyError {
	e := &TopologyError{Exchange: x.name, Role: "exchange", Subscription: x.subscription, Err: err}
	if m := inequivalentExchangeArg.FindStringSubmatch(err.Reason); m != nil {
		e.Argument = m[1]
		e.Want, _ = argValue(m[2])
		e.Have, _ = argValue(m[3])
	}
	deleteIt := fmt.Sprintf("delete it (rabbitmqadmin delete exchange name=%s) so that it is declared again; its bindings go with it", x.name)
	switch e.Argument {
	case "type":
		e.declared = fmt.Sprintf("subscription %s declares it %s", x.subscription, e.Want)
		e.Fix = fmt.Sprintf("an exchange's type never changes: set exchange_type=%s to match, or %s", e.Have, deleteIt)
	case "durable":
		e.declared = fmt.Sprintf("subscription %s declares it durable %s", x.subscription, e.Want)
		e.Fix = "subscriptions bind to durable exchanges, so that bindings survive a broker restart: " + deleteIt
	default:
		e.declared = fmt.Sprintf("subscription %s declares it with %s", x.subscription, argText(e.Argument, e.Want))
		e.Fix = deleteIt
	}
	return e
}
