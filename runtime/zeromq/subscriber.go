package zeromq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/streamgen/streamgen/runtime"
)

// DefaultPrefetch is how many received messages may wait for a free worker
// when the subscription does not set Prefetch.
const DefaultPrefetch = 16

// Errors a ZeroMQ subscription reports.
var (
	// ErrAckUnsupported is what acknowledging a ZeroMQ message reports:
	// ZeroMQ delivers at most once and has no acknowledgement.
	ErrAckUnsupported = fmt.Errorf("zeromq: ack: ZeroMQ has no acknowledgement, a message is gone once received: %w", errors.ErrUnsupported)
	// ErrNackUnsupported is what rejecting a ZeroMQ message reports: the
	// message is dropped, since nothing can take it back.
	ErrNackUnsupported = fmt.Errorf("zeromq: nack: ZeroMQ has no acknowledgement, so a rejected message is dropped: %w", errors.ErrUnsupported)

	errQueueClosing = errors.New("zeromq: the queue is shutting down and no longer receives")
	errCopyLost     = errors.New("zeromq: the broker stopped before the retry delay ended; ZeroMQ stores nothing, so the copy is lost")
	errNotHandled   = errors.New("zeromq: the broker stopped before a worker took the message; it is lost")
)

// subscriber runs one subscription: a receiver puts messages on incoming,
// and Workers() goroutines parse them, call Consumer.Process and carry out
// the verdicts.
type subscriber struct {
	b        *Broker
	c        *runtime.Consumer
	name     string
	incoming chan inbound
	recv     *receiver
	workers  sync.WaitGroup
	closing  atomic.Bool
}

func newSubscriber(b *Broker, c *runtime.Consumer, q *queueConfig) *subscriber {
	sub := c.Subscription()
	prefetch := sub.Prefetch
	if prefetch <= 0 {
		prefetch = DefaultPrefetch
	}
	limit := q.maxMessageBytes
	if limit == 0 {
		limit = DefaultMaxMessageBytes
		if sub.MaxPayloadBytes > 0 {
			limit = int64(sub.MaxPayloadBytes) + payloadAllowance
		}
	}
	s := &subscriber{b: b, c: c, name: sub.Name, incoming: make(chan inbound, prefetch)}
	s.recv = newReceiver(sub.Name, q, limit, s.incoming, b.clock, c.Logger(), s.tooLarge)
	return s
}

// stopReceiving closes the sockets; the workers go on with what was
// received and then return.
func (s *subscriber) stopReceiving() {
	s.closing.Store(true)
	s.recv.stop()
	close(s.incoming)
}

// target is where a sender of this broker reaches the subscription's bound
// queue.
func (s *subscriber) target() (string, string, error) {
	if s.closing.Load() {
		return "", "", errQueueClosing
	}
	a := s.recv.addr()
	if a == nil {
		return "", "", fmt.Errorf("zeromq: queue %q is not bound here", s.name)
	}
	return a.Network(), dialAddress(a), nil
}

func (s *subscriber) addr() net.Addr { return s.recv.addr() }

// handle parses one message, processes it and carries out the verdict.
func (s *subscriber) handle(ctx context.Context, in inbound) {
	env, d, err := s.delivery(in)
	if err != nil {
		s.c.Discard(d, strings.TrimPrefix(err.Error(), "zeromq: "), nil) // "malformed message: ..."
		return
	}
	if ctx.Err() != nil {
		// Shutdown's deadline passed: no handler may start any more.
		s.c.Discard(d, "not handled before the shutdown deadline", errNotHandled)
		return
	}
	v := s.c.Process(ctx, d)
	s.carryOut(ctx, env, d, v)
}

// delivery parses a received message. On error the returned delivery holds
// what could be read of it (its message id, for the log).
func (s *subscriber) delivery(in inbound) (*Envelope, *runtime.Delivery, error) {
	d := &runtime.Delivery{Headers: map[string]string{}}
	env, err := ParseEnvelope(in.frames)
	if err != nil {
		return nil, d, fmt.Errorf("%w (from %s)", err, in.peer)
	}
	d.Raw = env
	d.Body = env.Body
	for _, h := range env.Headers {
		switch h.Name {
		case HeaderType:
			d.Type = h.Value
		case HeaderContentType:
			d.ContentType = h.Value
		case HeaderMessageID:
			d.MessageID = h.Value
		default:
			d.Headers[h.Name] = h.Value
		}
	}
	if env.Subscription != s.name {
		return nil, d, fmt.Errorf("%w: it is addressed to subscription %q, and this queue takes only %q (from %s)",
			ErrMalformed, env.Subscription, s.name, in.peer)
	}
	// The header names are lower case, and so is the retry count's.
	count, err := runtime.ParseRetryCount(d.Headers[s.b.cfg.retryCountHeader])
	if err != nil {
		return nil, d, fmt.Errorf("%w: header %s: %w", ErrMalformed, s.b.cfg.retryCountHeader, err)
	}
	d.Attempt = 1 + count
	return env, d, nil
}

// tooLarge reports a message over the size limit, whose connection is then
// closed.
func (s *subscriber) tooLarge(peer string, err error) {
	s.c.Discard(&runtime.Delivery{}, fmt.Sprintf("message too large: %v; the connection from %s is closed (raise it with zeromq.MaxMessageBytes)", err, peer), nil)
}

// carryOut executes verdict v for the delivery d of env, then settles it.
func (s *subscriber) carryOut(ctx context.Context, env *Envelope, d *runtime.Delivery, v runtime.Verdict) {
	switch v.Kind {
	case runtime.VerdictAck, runtime.VerdictDrop:
		s.ackUnsupported()
		s.c.Settle(d, v, nil)
	case runtime.VerdictReject:
		s.nackUnsupported()
		s.c.Settle(d, v, nil)
	case runtime.VerdictRetry:
		s.retry(ctx, env, d, v)
		s.ackUnsupported()
	case runtime.VerdictPark:
		s.b.sendCopy(ctx, v.Queue, s.parked(env, v), func(err error) { s.c.Settle(d, v, err) })
		s.ackUnsupported()
	default:
		s.c.Settle(d, v, fmt.Errorf("zeromq: unknown verdict %v", v.Kind))
	}
}

// retry sends a copy of env (body and headers as they arrived, the retry
// count one more) to the verdict's queue once its delay has passed, through
// the queue's outbox; with no delay the worker puts it there itself (see
// Broker.sendCopy). The copy is settled when sent, or when it is lost at
// shutdown.
func (s *subscriber) retry(ctx context.Context, env *Envelope, d *runtime.Delivery, v runtime.Verdict) {
	cp := env.clone() // v.Queue is out_retry, self already resolved by the Consumer
	cp.Subscription = v.Queue
	cp.SetHeader(s.b.cfg.retryCountHeader, strconv.Itoa(d.Attempt)) // count + 1
	send := func(ctx context.Context) { s.b.sendCopy(ctx, v.Queue, cp, func(err error) { s.c.Settle(d, v, err) }) }
	if v.Delay <= 0 {
		send(ctx)
		return
	}
	s.b.copies.schedule(v.Delay, send, func() { s.c.Settle(d, v, errCopyLost) })
}

// parked is the copy of env for the dead-letter queue: framed with that
// queue's name, with the explanation headers added. It starts a fresh retry
// count, so the dead-letter queue's own subscription applies its own
// max_attempts; the attempts made are in x-streamgen-attempts.
func (s *subscriber) parked(env *Envelope, v runtime.Verdict) *Envelope {
	cp := env.clone()
	cp.Subscription = v.Queue
	cp.DeleteHeader(s.b.cfg.retryCountHeader)
	dl := runtime.DeadLetterHeaders(s.name, v, s.b.clock.Now())
	for _, k := range slices.Sorted(maps.Keys(dl)) {
		cp.SetHeader(k, oneLine(dl[k]))
	}
	return cp
}

func (s *subscriber) ackUnsupported() {
	s.c.WarnOnce("zeromq-ack", "ZeroMQ cannot acknowledge a message; acks do nothing (logged once per subscription)", "err", ErrAckUnsupported)
}

func (s *subscriber) nackUnsupported() {
	s.c.WarnOnce("zeromq-nack", "ZeroMQ cannot reject a message back to a broker; rejected messages are dropped (logged once per subscription)", "err", ErrNackUnsupported)
}

// lineBreaks turns each line break into a space. A Replacer is safe for
// concurrent use and never changes.
var lineBreaks = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ")

// oneLine makes s fit a header value: line breaks become spaces.
func oneLine(s string) string { return lineBreaks.Replace(s) }
