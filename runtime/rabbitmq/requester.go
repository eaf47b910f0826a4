package rabbitmq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// DirectReplyTo is the reply_to of the requests a Requester sends:
// RabbitMQ's direct reply-to, which delivers a reply straight to the
// channel that sent the request, with no reply queue.
const DirectReplyTo = "amq.rabbitmq.reply-to"

// roleRequest is the connection role of a Requester.
const roleRequest = "request"

// Why a request got no reply. Request errors wrap one of these, or ctx's
// error when its deadline passed.
var (
	// ErrReplyLost: the connection that carried the request closed before
	// its reply came. The request may have been handled; its reply can no
	// longer arrive, since direct reply-to delivers to that connection's
	// channel alone.
	ErrReplyLost = errors.New("the connection closed before the reply came; the request may have been handled, but its reply can no longer arrive")
	// ErrCorrelationInFlight: a request with the same correlation id
	// awaits its reply already.
	ErrCorrelationInFlight = errors.New("a request with this correlation id awaits its reply already")
)

// Requester sends requests over RabbitMQ and waits for their replies, a
// runtime.Requester that generated typed clients take
// (pricing.RequestQuote(ctx, requester, req)). It uses direct reply-to:
// one connection, one channel that publishes the requests and consumes
// DirectReplyTo (no-ack), and a map from correlation id to the call
// waiting for it, so that any number of requests are in flight at once on
// that channel. A reply whose call is no longer waiting (its deadline
// passed) is dropped with a log line.
//
// A request is transient (it is worth nothing once its caller stops
// waiting, and its reply can only reach the channel that sent it) and
// mandatory: one to a queue that does not exist fails at once, wrapping
// ErrUnroutable. The deadline is ctx's: Request returns an error wrapping
// ctx's once it ends. A lost connection fails the calls waiting
// (ErrReplyLost); the next Request connects again.
//
// A Broker is a Requester too (Broker.Request), over a connection of its
// own; NewRequester makes one for a program that only sends requests.
type Requester struct {
	dialer *dialer
	logger func() *slog.Logger
	codec  func() runtime.Codec

	opening sync.Mutex // held while a session opens, so that one does
	// sess is the current session, which every request reads: nil before
	// the first and after Close.
	sess   atomic.Pointer[replySession]
	mu     sync.Mutex
	closed bool
}

// NewRequester returns a Requester for the broker at url (a cluster's
// addresses as a comma list, as New takes). Of the options, it takes
// WithConnectionName, WithTLSConfig, WithLogger, WithCodec,
// WithAddressesInOrder and WithHandshakeTimeout. It connects on the first
// Request; Close closes it.
func NewRequester(url string, opts ...Option) *Requester {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	log := o.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := newDialer(url, o.tls, cmp.Or(o.connectionName, DefaultConnectionName), o.inOrder)
	d.handshake = o.handshake
	d.log = func() *slog.Logger { return log }
	codec := adapter.NewPublishCodec(o.codec)
	return newRequester(d, d.log, codec.Codec)
}

func newRequester(d *dialer, logger func() *slog.Logger, codec func() runtime.Codec) *Requester {
	return &Requester{dialer: d, logger: logger, codec: codec}
}

// Codec returns the codec runtime.Request encodes requests and decodes
// replies with: the one given WithCodec, else JSON (a Broker's
// Requester: the Broker's).
func (r *Requester) Codec() runtime.Codec { return r.codec() }

// Request sends msg to queue (through msg.Exchange when set, with
// msg.RoutingKey when set) with DirectReplyTo as its reply_to, and waits
// for the reply with msg's correlation id, which runtime.Request sets. It
// returns the reply as it arrived; an error wrapping ctx's error once ctx
// ends first; ErrUnroutable when no queue takes the request;
// ErrReplyLost when the connection closed first; ErrClosed after Close.
func (r *Requester) Request(ctx context.Context, queue string, msg runtime.Message) (runtime.Message, error) {
	corr := msg.CorrelationID
	key := cmp.Or(msg.RoutingKey, queue)
	if corr == "" {
		return runtime.Message{}, fmt.Errorf("rabbitmq: request %s to %q: the message has no correlation id: send it with runtime.Request, which sets one", msg.Type, key)
	}
	s, err := r.session(ctx)
	if err != nil {
		return runtime.Message{}, fmt.Errorf("rabbitmq: request %s to %q: %w", msg.Type, key, err)
	}
	got, err := s.await(corr)
	if err != nil {
		return runtime.Message{}, fmt.Errorf("rabbitmq: request %s to %q: correlation id %q: %w", msg.Type, key, corr, err)
	}
	pub := publishingOf(msg, time.Now())
	pub.ReplyTo = DirectReplyTo
	pub.DeliveryMode = amqp.Transient
	if err := s.ch.PublishWithContext(ctx, msg.Exchange, key, !msg.AllowUnroutable, false, pub); err != nil {
		s.forget(corr, got)
		if errors.Is(err, amqp.ErrClosed) {
			err = fmt.Errorf("%w: %v", ErrReplyLost, err)
		}
		return runtime.Message{}, fmt.Errorf("rabbitmq: request %s to %q: send: %w", msg.Type, key, err)
	}
	select {
	case rep := <-got:
		if rep.err != nil {
			return runtime.Message{}, requestError(msg, key, rep.err)
		}
		return rep.msg, nil
	case <-ctx.Done():
		s.forget(corr, got)
		return runtime.Message{}, fmt.Errorf("rabbitmq: request %s to %q: no reply before the caller's deadline (a reply that comes later is dropped): %w", msg.Type, key, context.Cause(ctx))
	}
}

// requestError is what Request returns for err, why the request to key
// got no reply.
func requestError(msg runtime.Message, key string, err error) error {
	if errors.Is(err, ErrUnroutable) && msg.Exchange == "" {
		return fmt.Errorf("rabbitmq: request %s to %q: %w: there is no queue %q: start the service that answers it (its subscription declares the queue)", msg.Type, key, err, key)
	}
	return routeError(msg.Type, msg.Exchange, key, err)
}

// Close closes the connection; the calls still waiting fail with
// ErrReplyLost, and Request fails with ErrClosed from now on.
func (r *Requester) Close() error {
	r.mu.Lock()
	r.closed = true
	s := r.sess.Swap(nil)
	r.mu.Unlock()
	if s != nil {
		s.close()
	}
	return nil
}

// session returns the open session, opening one when there is none or
// the last was lost.
func (r *Requester) session(ctx context.Context) (*replySession, error) {
	if s, err := r.current(); s != nil || err != nil {
		return s, err
	}
	r.opening.Lock()
	defer r.opening.Unlock()
	if s, err := r.current(); s != nil || err != nil {
		return s, err
	}
	s, err := openReplySession(ctx, r.dialer, r.logger())
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		s.close()
		return nil, ErrClosed
	}
	old := r.sess.Swap(s)
	if old != nil {
		go old.close()
	}
	return s, nil
}

// current returns the session when it is usable, ErrClosed after Close,
// or neither.
func (r *Requester) current() (*replySession, error) {
	if s := r.sess.Load(); s != nil && !s.isLost() {
		return s, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	return nil, nil
}

// replySession is a Requester's connection and channel: the channel
// publishes requests and consumes their replies from DirectReplyTo.
type replySession struct {
	conn *connection
	ch   *amqp.Channel
	log  *slog.Logger
	done sync.WaitGroup // the goroutines reading the channel

	// lost is set once the channel closed: no reply comes any more.
	lost atomic.Bool

	mu      sync.Mutex
	waiting map[string]chan reply
}

// reply is what a waiting call gets: the reply, or why none comes.
type reply struct {
	msg runtime.Message
	err error
}

func openReplySession(ctx context.Context, d *dialer, log *slog.Logger) (*replySession, error) {
	conn, err := d.dial(ctx, roleRequest)
	if err != nil {
		return nil, err
	}
	s := &replySession{conn: conn, log: log, waiting: map[string]chan reply{}}
	fail := func(what string, err error) (*replySession, error) {
		_ = conn.Close()
		return nil, fmt.Errorf("rabbitmq: %s: %w", what, err)
	}
	if s.ch, err = conn.Channel(); err != nil {
		return fail("open the requests' channel", err)
	}
	returns := s.ch.NotifyReturn(make(chan amqp.Return, 16))
	deliveries, err := s.ch.Consume(DirectReplyTo, "", true, false, false, false, nil)
	if err != nil {
		return fail("consume "+DirectReplyTo, err)
	}
	s.done.Go(func() { s.readReturns(returns) })
	s.done.Go(func() { s.readReplies(deliveries) })
	return s, nil
}

// await registers a call waiting for the reply with correlation id corr.
func (s *replySession) await(corr string) (chan reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost.Load() {
		return nil, ErrReplyLost
	}
	if _, dup := s.waiting[corr]; dup {
		return nil, ErrCorrelationInFlight
	}
	got := make(chan reply, 1)
	s.waiting[corr] = got
	return got, nil
}

// forget stops waiting for the reply of corr, unless another call waits
// for it by now.
func (s *replySession) forget(corr string, got chan reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting[corr] == got {
		delete(s.waiting, corr)
	}
}

// take removes and returns the call waiting for corr, or nil.
func (s *replySession) take(corr string) chan reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := s.waiting[corr]
	delete(s.waiting, corr)
	return got
}

// readReplies hands each reply to its waiting call, until the channel
// closes; then it fails the calls still waiting.
func (s *replySession) readReplies(deliveries <-chan amqp.Delivery) {
	for d := range deliveries {
		got := s.take(d.CorrelationId)
		if got == nil {
			s.log.Info("rabbitmq: a reply came with no request waiting for it (its caller's deadline passed); dropped",
				"correlation_id", d.CorrelationId, "message_id", d.MessageId, "message_type", d.Type, "error", d.Headers[runtime.HeaderReplyError])
			continue
		}
		got <- reply{msg: replyOf(&d)}
	}
	s.mu.Lock()
	s.lost.Store(true)
	waiting := s.waiting
	s.waiting = map[string]chan reply{}
	s.mu.Unlock()
	for _, got := range waiting {
		got <- reply{err: ErrReplyLost}
	}
}

// readReturns fails the call of each request the broker returned: no
// queue took it.
func (s *replySession) readReturns(returns <-chan amqp.Return) {
	for r := range returns {
		if got := s.take(r.CorrelationId); got != nil {
			got <- reply{err: fmt.Errorf("%w (%d %s)", ErrUnroutable, r.ReplyCode, r.ReplyText)}
		}
	}
}

func (s *replySession) isLost() bool {
	return s.lost.Load() || s.ch.IsClosed()
}

// close closes the connection and waits until its goroutines return.
func (s *replySession) close() {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	s.conn.closeWithin(ctx, func() {})
	s.done.Wait()
}

// replyOf is the reply d as a runtime message. A reply without headers
// (a handler's) has none: no map.
func replyOf(d *amqp.Delivery) runtime.Message {
	var headers map[string]string
	if len(d.Headers) > 0 {
		headers = textHeaders(d.Headers)
	}
	return runtime.Message{
		ID:          d.MessageId,
		Type:        d.Type,
		ContentType: d.ContentType,
		Headers:     headers,
		Body:        d.Body,
		Properties: runtime.Properties{
			CorrelationID: d.CorrelationId,
			ReplyTo:       d.ReplyTo,
			Priority:      d.Priority,
			Timestamp:     d.Timestamp,
			AppID:         d.AppId,
		},
	}
}

// Request sends a request and waits for its reply as a Requester does
// (see Requester.Request), over a connection of the Broker's own, opened
// on the first request and closed by Shutdown: a service can mount its
// subscriptions, publish and send requests with one Broker. Generated
// typed clients call it through runtime.Request.
func (b *Broker) Request(ctx context.Context, queue string, msg runtime.Message) (runtime.Message, error) {
	return b.req.Request(ctx, queue, msg)
}

// The Broker is a runtime.Requester.
var _ runtime.Requester = (*Broker)(nil)
