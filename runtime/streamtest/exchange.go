package streamtest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/streamgen/streamgen/runtime"
)

// ErrUnroutable is wrapped by the error of a RabbitMQ Publish through an
// exchange that routes the message to no queue, unless the message allows
// it (runtime.AllowUnroutable), as the real broker's mandatory flag does.
var ErrUnroutable = errors.New("unroutable: no queue is bound for the routing key")

// memExchange is a RabbitMQ exchange in memory: its type and bindings.
type memExchange struct {
	kind     runtime.ExchangeType
	bindings []memBinding
}

type memBinding struct {
	queue, key string
}

// Bind binds queue to the exchange of that name and type with each key
// (none on fanout), declaring the exchange when it does not exist yet, as
// a subscription with exchange= does when it starts. Tests call it to
// route what a service publishes without mounting the subscriptions of
// the services that consume it. An exchange that exists with another
// type is an error, as on RabbitMQ.
func (b *Broker) Bind(exchange string, kind runtime.ExchangeType, queue string, keys ...string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bindLocked(exchange, kind, queue, keys)
}

func (b *Broker) bindLocked(exchange string, kind runtime.ExchangeType, queue string, keys []string) error {
	kind = cmp.Or(kind, runtime.TopicExchange)
	if b.exchanges == nil {
		b.exchanges = map[string]*memExchange{}
	}
	x := b.exchanges[exchange]
	if x == nil {
		x = &memExchange{kind: kind}
		b.exchanges[exchange] = x
	}
	if x.kind != kind {
		return fmt.Errorf("streamtest: exchange %s exists as %s, not %s: an exchange's type never changes", exchange, x.kind, kind)
	}
	if kind == runtime.FanoutExchange {
		keys = []string{""}
	}
	for _, k := range keys {
		bd := memBinding{queue: queue, key: k}
		if !slices.Contains(x.bindings, bd) {
			x.bindings = append(x.bindings, bd)
		}
	}
	return nil
}

// routeLocked returns the queues the exchange delivers a message with
// routing key key to, each once, in the order they were bound.
func (b *Broker) routeLocked(exchange, key string) ([]string, error) {
	x := b.exchanges[exchange]
	if x == nil {
		return nil, fmt.Errorf("no exchange %q (a subscription with exchange=%s declares it when it starts, or call Bind)", exchange, exchange)
	}
	var out []string
	for _, bd := range x.bindings {
		if routes(x.kind, bd.key, key) && !slices.Contains(out, bd.queue) {
			out = append(out, bd.queue)
		}
	}
	return out, nil
}

// publishToExchangeLocked puts a copy of msg in every queue its exchange
// routes it to.
func (b *Broker) publishToExchangeLocked(key string, msg runtime.Message) error {
	queues, err := b.routeLocked(msg.Exchange, key)
	if err != nil {
		return fmt.Errorf("streamtest: publish %s to exchange %q: %w", msg.Type, msg.Exchange, err)
	}
	if len(queues) == 0 {
		if msg.AllowUnroutable {
			return nil
		}
		return fmt.Errorf("streamtest: publish %s to exchange %q with routing key %q: %w (publish with runtime.AllowUnroutable() to let it be dropped)", msg.Type, msg.Exchange, key, ErrUnroutable)
	}
	for _, q := range queues {
		b.enqueueLocked(q, cloneMessage(msg))
	}
	return nil
}

// topicMatches reports whether routingKey matches the topic binding
// pattern: words separated by dots, where * matches exactly one word and #
// zero or more. It is the rule of RabbitMQ's topic exchange.
func topicMatches(pattern, routingKey string) bool {
	return matchWords(strings.Split(pattern, "."), strings.Split(routingKey, "."))
}

// matchWords matches pattern words p against key words k in
// O(len(p)·len(k)) time, whatever the pattern (no backtracking).
func matchWords(p, k []string) bool {
	// ok[j] reports whether p[:i] matches k[:j], for the current i.
	ok := make([]bool, len(k)+1)
	ok[0] = true
	for _, w := range p {
		switch w {
		case "#":
			// # matches zero or more words: k[:j] matches when some k[:j']
			// with j' <= j did.
			for j := 1; j <= len(k); j++ {
				ok[j] = ok[j] || ok[j-1]
			}
		default:
			for j := len(k); j >= 1; j-- {
				ok[j] = ok[j-1] && (w == "*" || w == k[j-1])
			}
			ok[0] = false
		}
	}
	return ok[len(k)]
}

// routes reports whether an exchange of type kind delivers a message with
// routingKey to a queue bound with bindingKey.
func routes(kind runtime.ExchangeType, bindingKey, routingKey string) bool {
	switch kind {
	case runtime.FanoutExchange:
		return true
	case runtime.DirectExchange:
		return bindingKey == routingKey
	}
	return topicMatches(bindingKey, routingKey)
}
