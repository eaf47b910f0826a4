package runtime

import (
	"fmt"
	"strings"
)

// ExchangeType is the type of the RabbitMQ exchange a subscription's queue
// is bound to: it decides which binding keys a routing key matches.
type ExchangeType string

const (
	// TopicExchange (the default) matches routing keys against patterns of
	// dot-separated words, where * stands for one word and # for zero or
	// more.
	TopicExchange ExchangeType = "topic"
	// DirectExchange delivers a message to the queues bound with exactly
	// its routing key.
	DirectExchange ExchangeType = "direct"
	// FanoutExchange delivers every message to every bound queue; it has
	// no binding keys.
	FanoutExchange ExchangeType = "fanout"
)

// maxShortString is the longest AMQP short string: exchange names,
// routing keys and binding keys are short strings.
const maxShortString = 255

// ExchangeKind returns the type of the subscription's exchange:
// ExchangeType, or TopicExchange when it is not set. It means nothing when
// Exchange is "".
func (s *Subscription) ExchangeKind() ExchangeType {
	if s.ExchangeType == "" {
		return TopicExchange
	}
	return s.ExchangeType
}

// validateExchange checks the exchange fields of s for any broker.
func (s *Subscription) validateExchange(add func(int, string, string, ...any)) {
	if s.Exchange == "" {
		if s.ExchangeType != "" {
			add(-1, "exchange_type", "exchange_type=%s needs an exchange: add exchange=<name>, or remove exchange_type", s.ExchangeType)
		}
		if len(s.Bindings) > 0 {
			add(-1, "binding", "binding needs an exchange to bind the queue to: add exchange=<name>, or remove binding")
		}
		return
	}
	if len(s.Exchange) > maxShortString {
		add(-1, "exchange", "the exchange name is %d bytes long: RabbitMQ allows at most %d", len(s.Exchange), maxShortString)
	}
	kind := s.ExchangeKind()
	switch kind {
	case TopicExchange, DirectExchange:
		if len(s.Bindings) == 0 {
			add(-1, "exchange", "exchange %s is a %s exchange, which delivers only what a binding key matches: add binding=<key>, such as binding=%s", s.Exchange, kind, bindingExample(kind))
		}
	case FanoutExchange:
		if len(s.Bindings) > 0 {
			add(-1, "binding", "exchange %s is a fanout exchange, which ignores binding keys and delivers every message to every queue: remove binding, or use exchange_type=topic or direct", s.Exchange)
		}
		return
	default:
		add(-1, "exchange_type", "exchange_type is %q: use topic, direct or fanout", s.ExchangeType)
		return
	}
	seen := map[string]bool{}
	for _, b := range s.Bindings {
		if seen[b] {
			add(-1, "binding", "binding key %q is listed twice: list each key once", b)
			continue
		}
		seen[b] = true
		if msg := bindingProblem(kind, b); msg != "" {
			add(-1, "binding", "%s", msg)
		}
	}
}

func bindingExample(kind ExchangeType) string {
	if kind == DirectExchange {
		return "order.placed"
	}
	return "order.*"
}

// bindingProblem says what is wrong with the binding key b of an exchange
// of type kind, or returns "".
func bindingProblem(kind ExchangeType, b string) string {
	if b == "" {
		return "a binding key is empty: write binding=<key>[,<key>...] with no empty entry"
	}
	if len(b) > maxShortString {
		return fmt.Sprintf("binding key %.20q... is %d bytes long: RabbitMQ allows at most %d", b, len(b), maxShortString)
	}
	if kind != TopicExchange {
		return ""
	}
	for _, w := range strings.Split(b, ".") {
		switch {
		case w == "":
			return fmt.Sprintf("binding key %q has an empty word: topic patterns are words separated by single dots, such as order.* or order.#", b)
		case w != "*" && w != "#" && strings.ContainsAny(w, "*#"):
			return fmt.Sprintf("binding key %q has %q: * and # stand for whole words only (order.* matches order.placed, order* matches only the word order*); write them between dots", b, w)
		}
	}
	return ""
}
