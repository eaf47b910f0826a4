package zeromq

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/streamgen/streamgen/runtime"
)

// role says which side of a queue binds its endpoint.
type role uint8

const (
	// roleBind: the queue's reader binds a PULL socket; senders dial it.
	roleBind role = iota + 1
	// roleDial: the queue's readers dial a ventilator that binds a PUSH.
	roleDial
	// roleVentilator: this service binds a PUSH and hands each message to
	// one of the readers that dial in.
	roleVentilator
)

// Endpoint is where a queue's socket lives and which side binds it. Make
// one with Bind, Dial or Ventilator.
type Endpoint struct {
	role role
	addr string
}

// Bind declares a queue whose reader binds a PULL socket at addr
// ("tcp://host:port", "tcp://*:port" for every interface, or
// "ipc:///path/to/socket"). A subscription mounted on the queue binds it;
// publishing to the queue, from this service or any other that declares it
// the same way, dials it with a PUSH socket.
func Bind(addr string) Endpoint { return Endpoint{role: roleBind, addr: addr} }

// Dial declares a queue whose readers dial a ventilator at addr: the
// subscription mounted on it connects its PULL socket there and takes the
// share of messages the ventilator hands it. Such a subscription cannot send
// retry copies back to its queue: it names a queue it binds itself with
// out_retry=<queue>.
func Dial(addr string) Endpoint { return Endpoint{role: roleDial, addr: addr} }

// Ventilator declares a queue this service feeds: it binds a PUSH socket at
// addr, workers dial in (with Dial), and every message published to the
// queue goes to exactly one connected worker, round-robin among the live
// ones. With no worker connected, Publish waits for one.
func Ventilator(addr string) Endpoint { return Endpoint{role: roleVentilator, addr: addr} }

// String returns the endpoint as it was written.
func (e Endpoint) String() string { return e.addr }

// Option configures a Broker.
type Option func(*config)

// QueueOption configures one queue.
type QueueOption func(*queueConfig)

// DefaultMaxMessageBytes bounds a received message when neither
// MaxMessageBytes nor the subscription's max_payload_bytes say otherwise.
const DefaultMaxMessageBytes = 64 << 20

// payloadAllowance is what a received message may hold beyond its
// subscription's max_payload_bytes (name and headers, and a body a little
// over the limit, which the runtime then treats as poison).
const payloadAllowance = 1 << 20

// MaxMessageBytes bounds the size of a message received on the queue, all
// frames together. A peer that sends a larger message is disconnected before
// the message is read into memory (as libzmq does with ZMQ_MAXMSGSIZE), and
// the message is dropped with a warning. The default is the subscription's
// max_payload_bytes plus 1 MiB, or DefaultMaxMessageBytes when that is not
// set. Bodies over max_payload_bytes but within this bound are read and
// treated as poison (parked or dropped by the subscription's policy).
func MaxMessageBytes(n int64) QueueOption {
	return func(q *queueConfig) { q.maxMessageBytes = n }
}

// DefaultMaxInFlightBytes bounds the bytes of the messages a subscription
// has read and not yet handled, across all its connections, when
// MaxInFlightBytes does not say otherwise: 256 MiB, four messages of
// DefaultMaxMessageBytes. A subscription whose messages may be larger
// (max_payload_bytes) is bounded by one such message instead.
const DefaultMaxInFlightBytes = 256 << 20

// MaxInFlightBytes bounds the bytes of the messages the subscription on the
// queue has read and not yet handled, all its connections together
// (DefaultMaxInFlightBytes when 0): those being read, those waiting for a
// worker, and those being handled. A connection takes a message's bytes
// from the bound before it reads them, as their size is announced, and
// gives them back once the message is handled. While they do not fit, it
// reads no more: TCP holds its sender back, and nothing it sent is lost.
// Connections waiting for room are served in turn. The bound must be at
// least the largest message the queue takes (MaxMessageBytes, or the
// subscription's max_payload_bytes plus 1 MiB): Start refuses a smaller
// one. The name and header frames of a message wait beside its body
// outside the bound, at most 128 KiB per connection.
func MaxInFlightBytes(n int64) QueueOption {
	return func(q *queueConfig) { q.maxInFlightBytes = n }
}

// maxLeadingBytes bounds the subscription name and header frames of a
// received message together: a header frame at its limit and a name of
// 64 KiB. A message over it is treated as too large (its connection is
// closed), since a message waiting for room in the in-flight bound keeps
// them outside it.
const maxLeadingBytes = MaxHeaderBytes + 64<<10

// DefaultOutboxSize is how many messages may wait in memory for one queue
// when OutboxSize does not say otherwise: 1,000, libzmq's default send
// high-water mark.
const DefaultOutboxSize = 1000

// OutboxSize bounds how many messages may wait in memory to be sent to the
// queue (DefaultOutboxSize when 0): the copies this service sends there
// (retry copies, dead letters) while the queue does not take them, and, when
// this service is the queue's Ventilator, the messages waiting for each
// worker's connection. While the copies' outbox is full, a subscription
// sending one waits for room (a warning names the queue) and so holds back
// its own senders; a ventilator skips a worker whose queue is full.
// Messages still waiting when the shutdown deadline passes are lost:
// Shutdown reports each copy to the runtime, which logs it, counts them per
// queue, and returns an error.
func OutboxSize(n int) QueueOption {
	return func(q *queueConfig) { q.outboxSize = n }
}

// DefaultMaxConnections bounds the connections to a queue this service
// binds (a subscription's queue declared with Bind, or a Ventilator) when
// MaxConnections does not say otherwise.
const DefaultMaxConnections = 1024

// MaxConnections bounds the connections at once to the queue's endpoint
// when this service binds it (DefaultMaxConnections when 0): senders of a
// queue declared with Bind, workers of a Ventilator. A peer over the bound
// is hung up on, with a warning at most once a minute. Each connection
// costs memory only as its bytes arrive (a frame's buffer grows with the
// frame), and the messages of all connections together hold at most
// MaxInFlightBytes.
func MaxConnections(n int) QueueOption {
	return func(q *queueConfig) { q.maxConnections = n }
}

// Queue declares the endpoint of a queue (a subscription name).
// Subscriptions mounted on the broker read their queue there; Publish sends
// there.
func Queue(name string, ep Endpoint, opts ...QueueOption) Option {
	return func(c *config) {
		q := &queueConfig{name: name, ep: ep}
		for _, o := range opts {
			o(q)
		}
		if err := q.check(); err != nil {
			c.errs = append(c.errs, err)
			return
		}
		if c.queues[name] != nil {
			c.errs = append(c.errs, fmt.Errorf("zeromq: queue %q is declared twice", name))
			return
		}
		c.queues[name] = q
	}
}

// WithRetryCountHeader sets the header that carries the retry count, instead
// of runtime.RetryCountHeader ("x-retry-count"). Set it to
// "x-ruststream-retry-count" to share a queue with services written with the
// Rust framework that uses that name. Every service on a queue must use the
// same name: a count under another name is not seen.
func WithRetryCountHeader(name string) Option {
	return func(c *config) {
		if !isToken(name) {
			c.errs = append(c.errs, fmt.Errorf("zeromq: retry count header %q is not a valid header name", name))
			return
		}
		c.retryCountHeader = strings.ToLower(name)
	}
}

// WithLogger sets the logger of the broker's own messages (connections,
// ventilators). Without it the broker logs through the App's logger once
// started, and discards its messages before that. Subscriptions always log
// through the App's logger.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithCodec sets the codec runtime.Publish encodes with when it publishes
// through this Broker. By default that is the App's codec once started, and
// JSON before (a Broker used only to publish).
func WithCodec(c runtime.Codec) Option {
	return func(cfg *config) { cfg.codec = c }
}

// config is what New's options set.
type config struct {
	queues           map[string]*queueConfig
	retryCountHeader string
	logger           *slog.Logger
	codec            runtime.Codec
	errs             []error
}

// queueConfig is one declared queue.
type queueConfig struct {
	name             string
	ep               Endpoint
	network          string // "tcp" or "unix"
	address          string // host:port or a path
	maxMessageBytes  int64
	outboxSize       int
	maxConnections   int
	maxInFlightBytes int64
}

// messageLimit is the largest message the queue's subscription sub takes:
// MaxMessageBytes, else its max_payload_bytes plus an allowance, else
// DefaultMaxMessageBytes.
func (q *queueConfig) messageLimit(sub *runtime.Subscription) int64 {
	switch {
	case q.maxMessageBytes > 0:
		return q.maxMessageBytes
	case sub.MaxPayloadBytes > 0:
		return int64(sub.MaxPayloadBytes) + payloadAllowance
	}
	return DefaultMaxMessageBytes
}

// inFlightLimit is the queue's MaxInFlightBytes, or its default for
// messages of up to limit bytes.
func (q *queueConfig) inFlightLimit(limit int64) int64 {
	if q.maxInFlightBytes > 0 {
		return q.maxInFlightBytes
	}
	return max(DefaultMaxInFlightBytes, limit)
}

// outboxLimit is the queue's OutboxSize, or its default.
func (q *queueConfig) outboxLimit() int {
	if q.outboxSize == 0 {
		return DefaultOutboxSize
	}
	return q.outboxSize
}

// connectionLimit is the queue's MaxConnections, or its default.
func (q *queueConfig) connectionLimit() int {
	if q.maxConnections == 0 {
		return DefaultMaxConnections
	}
	return q.maxConnections
}

// check parses the endpoint address.
func (q *queueConfig) check() error {
	if q.name == "" {
		return errors.New("zeromq: a queue has no name")
	}
	if q.ep.role == 0 {
		return fmt.Errorf("zeromq: queue %q has no endpoint: use zeromq.Bind, zeromq.Dial or zeromq.Ventilator", q.name)
	}
	if q.maxMessageBytes < 0 {
		return fmt.Errorf("zeromq: queue %q: MaxMessageBytes is %d: it must be 0 (the default) or more", q.name, q.maxMessageBytes)
	}
	if q.outboxSize < 0 {
		return fmt.Errorf("zeromq: queue %q: OutboxSize is %d: it must be 0 (the default, %d) or more", q.name, q.outboxSize, DefaultOutboxSize)
	}
	if q.maxInFlightBytes < 0 {
		return fmt.Errorf("zeromq: queue %q: MaxInFlightBytes is %d: it must be 0 (the default, %d) or more", q.name, q.maxInFlightBytes, DefaultMaxInFlightBytes)
	}
	if q.maxConnections < 0 {
		return fmt.Errorf("zeromq: queue %q: MaxConnections is %d: it must be 0 (the default, %d) or more", q.name, q.maxConnections, DefaultMaxConnections)
	}
	network, address, err := parseAddr(q.ep.addr, q.ep.role != roleDial)
	if err != nil {
		return fmt.Errorf("zeromq: queue %q: %w", q.name, err)
	}
	q.network, q.address = network, address
	return nil
}

// parseAddr reads a ZeroMQ endpoint: tcp://host:port or ipc://path. In a
// bound endpoint the host "*" means every interface; port 0 picks a free
// port (Broker.Addr tells which).
func parseAddr(addr string, bound bool) (network, address string, err error) {
	scheme, rest, ok := strings.Cut(addr, "://")
	if !ok {
		return "", "", fmt.Errorf("endpoint %q has no transport: write tcp://host:port or ipc:///path", addr)
	}
	switch scheme {
	case "tcp":
		host, port, err := net.SplitHostPort(rest)
		if err != nil || port == "" {
			return "", "", fmt.Errorf("endpoint %q: want tcp://host:port", addr)
		}
		if host == "*" {
			if !bound {
				return "", "", fmt.Errorf("endpoint %q: a dialing endpoint names a host, not *", addr)
			}
			host = ""
		}
		return "tcp", net.JoinHostPort(host, port), nil
	case "ipc":
		if rest == "" {
			return "", "", fmt.Errorf("endpoint %q: want ipc:///path/to/socket", addr)
		}
		return "unix", rest, nil
	}
	return "", "", fmt.Errorf("endpoint %q: transport %q is not supported: use tcp or ipc", addr, scheme)
}

// dialAddress turns the address a listener got into one a dialer reaches:
// an unspecified IP (bound to every interface) becomes the loopback one.
func dialAddress(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok && (t.IP == nil || t.IP.IsUnspecified()) {
		ip := net.IPv4(127, 0, 0, 1)
		if t.IP != nil && t.IP.To4() == nil {
			ip = net.IPv6loopback
		}
		return net.JoinHostPort(ip.String(), fmt.Sprint(t.Port))
	}
	return a.String()
}
