package zeromq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/observe"
	"github.com/streamgen/streamgen/runtime/zeromq/internal/zmtp"
)

// DefaultPrefetch is how many received messages may wait for a free worker
// when the subscription does not set Prefetch.
const DefaultPrefetch = 16

var errQueueClosing = errors.New("zeromq: the queue is shutting down and no longer receives")

// subscriber runs one subscription: a receiver puts messages on incoming,
// and Workers() goroutines parse them and hand them to the Consumer, which
// decides what becomes of each. The subscriber is the Consumer's
// Transport: it sends the copies the Consumer builds.
type subscriber struct {
	b        *Broker
	c        *adapter.Consumer
	name     string
	incoming chan inbound
	recv     *receiver
	workers  sync.WaitGroup
	closing  atomic.Bool
	// sending counts the copies handed to an outbox and not yet settled,
	// by kind (adapter.CopyKind), so that a shutdown that gives up on them
	// says what they were.
	sending [adapter.DeadLetterCopy + 1]atomic.Int64
}

func newSubscriber(b *Broker, sub *runtime.Subscription, env runtime.Env, q *queueConfig) *subscriber {
	prefetch := sub.Prefetch
	if prefetch <= 0 {
		prefetch = DefaultPrefetch
	}
	limit := q.messageLimit(sub)
	s := &subscriber{b: b, name: sub.Name, incoming: make(chan inbound, prefetch)}
	s.c = adapter.NewConsumer(sub, env, adapter.Rules{Kind: runtime.ZeroMQ, RetryCountHeader: b.cfg.retryCountHeader}, s)
	s.recv = newReceiver(sub.Name, q, limit, q.inFlightLimit(limit), s.incoming, b.clock, s.c.Logger(), s.tooLarge)
	if env.Observing() {
		s.recv.cfg.Reconnected = func() { env.Report(observe.Event{Kind: observe.Reconnected, Broker: string(runtime.ZeroMQ)}) }
	}
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

// handle parses one message and hands it to the Consumer.
func (s *subscriber) handle(ctx context.Context, in inbound) {
	d, err := s.delivery(in)
	if err != nil {
		s.c.Discard(d, strings.TrimPrefix(err.Error(), "zeromq: "), nil) // "malformed message: ..."
		return
	}
	s.c.Handle(ctx, d)
}

// delivery parses a received message. On error the returned delivery holds
// what could be read of it (its message id, for the log).
func (s *subscriber) delivery(in inbound) (*adapter.Delivery, error) {
	r := new(received)
	d, env := &r.d, &r.env
	if err := parseEnvelope(env, in.frames, r.headers[:], s.name); err != nil {
		return d, fmt.Errorf("%w (from %s)", err, in.peer)
	}
	readEnvelope(d, env)
	if env.Subscription != s.name {
		return d, fmt.Errorf("%w: it is addressed to subscription %q, and this queue takes only %q (from %s)",
			ErrMalformed, env.Subscription, s.name, in.peer)
	}
	return d, nil
}

// readEnvelope fills d from env: the one reading of streamgen's ZeroMQ
// framing (envelopeOf writes it). The headers type, content-type and
// message-id and the property headers (correlation-id, reply-to, app-id,
// priority, timestamp) become d's fields; every other header, and a
// property header whose value does not parse, is one of d.Headers.
func readEnvelope(d *adapter.Delivery, env *Envelope) {
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
			if !setProperty(d, h) {
				if d.Headers == nil {
					d.Headers = make(map[string]string, len(env.Headers))
				}
				d.Headers[h.Name] = h.Value
			}
		}
	}
}

// received is a parsed message, allocated at once: its Delivery, the
// Envelope the Delivery's Raw points to, and room for the headers of most
// messages.
type received struct {
	d       adapter.Delivery
	env     Envelope
	headers [8]Header
}

// tooLarge reports a message over the size limit, whose connection is then
// closed.
func (s *subscriber) tooLarge(peer string, err error) {
	hint := "raise it with zeromq.MaxMessageBytes"
	if errors.Is(err, zmtp.ErrLeadTooLarge) {
		hint = fmt.Sprintf("a message's subscription name and header frames may hold %d bytes together", maxLeadingBytes)
	}
	s.c.Discard(&adapter.Delivery{}, fmt.Sprintf("message too large: %v; the connection from %s is closed (%s)", err, peer, hint), nil)
}

// Send puts cp, a copy of d's envelope with cp's header changes, in the
// outbox of the subscription cp.Queue (Broker.sendCopy): a destination
// that does not answer holds back no worker. done gets the outcome once
// the copy is written, or lost.
func (s *subscriber) Send(ctx context.Context, d *adapter.Delivery, cp *adapter.Copy, done func(error)) {
	kind := cp.Kind
	if int(kind) >= len(s.sending) {
		kind = 0
	}
	n := &s.sending[kind]
	n.Add(1)
	s.b.sendCopy(ctx, cp.Queue, s.copyEnvelope(d, cp), func(err error) {
		n.Add(-1)
		done(err)
	})
}

// unsettledCopies says which copies are still being sent, by kind: "2
// dead letters", "1 retry copy and 3 dead letters"; "copies" when none is
// counted any more.
func (s *subscriber) unsettledCopies() string {
	var parts []string
	for _, kind := range []adapter.CopyKind{adapter.RetryCopy, adapter.DeadLetterCopy, 0} {
		n := s.sending[kind].Load()
		if n <= 0 {
			continue
		}
		parts = append(parts, copiesOf(kind, n))
	}
	if len(parts) == 0 {
		return "copies"
	}
	return strings.Join(parts, " and ")
}

// copiesOf names n copies of a kind: "1 retry copy", "2 dead letters".
func copiesOf(kind adapter.CopyKind, n int64) string {
	if n == 1 {
		return "1 " + kind.String()
	}
	switch kind {
	case adapter.RetryCopy:
		return fmt.Sprintf("%d retry copies", n)
	case adapter.DeadLetterCopy:
		return fmt.Sprintf("%d dead letters", n)
	}
	return fmt.Sprintf("%d copies", n)
}

// copyEnvelope is cp as an envelope: d's, framed for cp.Queue, with cp's
// header changes.
func (s *subscriber) copyEnvelope(d *adapter.Delivery, cp *adapter.Copy) *Envelope {
	env := d.Raw.(*Envelope).clone()
	env.Subscription = cp.Queue
	env.Headers = slices.DeleteFunc(env.Headers, func(h Header) bool {
		return h.Name != HeaderType && h.Name != HeaderContentType && h.Name != HeaderMessageID && !cp.Keep(h.Name)
	})
	env.SetHeader(HeaderMessageID, cp.MessageID)
	for _, h := range cp.Set {
		env.SetHeader(h.Name, h.Value)
	}
	return env
}

// setProperty fills the message property of d that header h carries and
// returns true, or returns false when h is an application header. A
// priority or timestamp that does not parse is left an application header,
// for the handler to see as it came.
func setProperty(d *adapter.Delivery, h Header) bool {
	switch h.Name {
	case HeaderCorrelationID:
		d.CorrelationID = h.Value
	case HeaderReplyTo:
		d.ReplyTo = h.Value
	case HeaderAppID:
		d.AppID = h.Value
	case HeaderPriority:
		p, err := strconv.ParseUint(h.Value, 10, 8)
		if err != nil {
			return false
		}
		d.Priority = uint8(p)
	case HeaderTimestamp:
		t, err := time.Parse(time.RFC3339Nano, h.Value)
		if err != nil {
			return false
		}
		d.Timestamp = t
	default:
		return false
	}
	return true
}
