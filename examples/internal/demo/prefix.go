package demo

import (
	"context"
	"slices"
	"sync"

	"github.com/streamgen/streamgen/runtime"
)

// Broker is a runtime.Broker that is also a runtime.Publisher, as every
// broker of streamgen is.
type Broker interface {
	runtime.Broker
	runtime.Publisher
}

// Prefixed is a Broker that puts a prefix before the name of every queue
// it consumes, publishes to, or sends retry copies and dead letters to, and
// of every exchange it binds a queue to or publishes through. Tests and
// demos use it to run an example service, whose queue and exchange names
// the annotations fix, on a shared RabbitMQ broker under names of their
// own, so that concurrent runs do not meet. Routing and binding keys are
// left as they are. Make one with Prefix.
type Prefixed struct {
	inner  Broker
	prefix string

	mu   sync.Mutex
	subs []*runtime.Subscription
}

// Prefix returns b with prefix put before every queue and exchange name.
func Prefix(b Broker, prefix string) *Prefixed {
	return &Prefixed{inner: b, prefix: prefix}
}

// Name returns name with the prefix.
func (p *Prefixed) Name(name string) string { return p.prefix + name }

// Kind returns the inner broker's kind.
func (p *Prefixed) Kind() runtime.BrokerKind { return p.inner.Kind() }

// Start starts the inner broker with the subscriptions renamed: their
// queue, the exchange it is bound to, their dead-letter queues and their
// out_retry queues (other than self) get the prefix.
func (p *Prefixed) Start(ctx context.Context, env runtime.Env, in []*runtime.Subscription) error {
	subs := make([]*runtime.Subscription, len(in))
	for i, s := range in {
		sub := *s
		sub.Name = p.Name(sub.Name)
		if sub.Exchange != "" {
			sub.Exchange = p.Name(sub.Exchange)
		}
		sub.Handlers = slices.Clone(sub.Handlers)
		for j := range sub.Handlers {
			policy := &sub.Handlers[j].Policy
			if policy.DeadLetter != "" {
				policy.DeadLetter = p.Name(policy.DeadLetter)
			}
			if policy.OutRetry != "" {
				policy.OutRetry = p.Name(policy.OutRetry)
			}
		}
		subs[i] = &sub
	}
	p.mu.Lock()
	p.subs = subs
	p.mu.Unlock()
	return p.inner.Start(ctx, env, subs)
}

// Subscriptions returns the renamed subscriptions of the last Start.
func (p *Prefixed) Subscriptions() []*runtime.Subscription {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.subs)
}

// Shutdown shuts the inner broker down.
func (p *Prefixed) Shutdown(ctx context.Context) error { return p.inner.Shutdown(ctx) }

// Publish publishes msg to the prefixed queue, or through the prefixed
// exchange with its routing key as it is.
func (p *Prefixed) Publish(ctx context.Context, queue string, msg runtime.Message) error {
	if msg.Exchange != "" {
		msg.Exchange = p.Name(msg.Exchange)
		return p.inner.Publish(ctx, queue, msg)
	}
	return p.inner.Publish(ctx, p.Name(queue), msg)
}

// Exchanges returns the distinct exchanges the renamed subscriptions of
// the last Start are bound to, in their order.
func (p *Prefixed) Exchanges() []string {
	var out []string
	for _, s := range p.Subscriptions() {
		if s.Exchange != "" && !slices.Contains(out, s.Exchange) {
			out = append(out, s.Exchange)
		}
	}
	return out
}

// Codec returns the inner broker's codec, when it has one, so that
// runtime.Publish encodes as the inner broker would.
func (p *Prefixed) Codec() runtime.Codec {
	if cp, ok := p.inner.(interface{ Codec() runtime.Codec }); ok {
		return cp.Codec()
	}
	return nil
}
