package zeromq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/internal/wait"
	"github.com/streamgen/streamgen/runtime/zeromq/internal/zmtp"
)

// Broker runs subscriptions on ZeroMQ sockets and publishes to ZeroMQ
// queues. It is a runtime.Broker and a runtime.Publisher. Make one with New.
type Broker struct {
	cfg    config
	cfgErr error // every error of the options, joined

	mu       sync.Mutex
	started  bool
	stopping bool // Shutdown began: no Start, no Listen
	closed   bool // the senders are closed: nothing is sent any more
	log      *slog.Logger
	clock    clock.Clock
	codec    adapter.PublishCodec
	subs     map[string]*subscriber
	senders  map[string]sender
	outboxes map[string]*outbox // of the queues copies are sent to
	flushing bool               // Shutdown flushes the outboxes: no new ones

	// work is the context of handlers and of the copies they cause; it ends
	// when Shutdown's context ends, or when Shutdown returns.
	work    context.Context
	endWork context.CancelFunc
}

// New returns a broker for the queues its options declare. Configuration
// errors (an endpoint that does not parse, a queue declared twice) are
// returned by Start and Publish.
func New(opts ...Option) *Broker {
	b := &Broker{
		cfg:      config{queues: map[string]*queueConfig{}, retryCountHeader: runtime.RetryCountHeader},
		log:      slog.New(slog.DiscardHandler),
		clock:    clock.System{},
		subs:     map[string]*subscriber{},
		senders:  map[string]sender{},
		outboxes: map[string]*outbox{},
	}
	for _, o := range opts {
		o(&b.cfg)
	}
	b.cfgErr = errors.Join(b.cfg.errs...)
	if b.cfg.logger != nil {
		b.log = b.cfg.logger
	}
	b.codec = adapter.NewPublishCodec(b.cfg.codec)
	return b
}

// Kind returns runtime.ZeroMQ.
func (b *Broker) Kind() runtime.BrokerKind { return runtime.ZeroMQ }

// Codec returns the codec runtime.Publish encodes with on this Broker: the
// one given WithCodec, else the App's once started, else JSON.
func (b *Broker) Codec() runtime.Codec { return b.codec.Codec() }

// Start checks the subscriptions against the declared queues, binds the
// queues of subscriptions declared with Bind and of ventilators, starts
// dialling the ventilators of subscriptions declared with Dial, and starts
// each subscription's workers. Startup errors name the subscription.
func (b *Broker) Start(ctx context.Context, env runtime.Env, subs []*runtime.Subscription) error {
	if b.cfgErr != nil {
		return b.cfgErr
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopping {
		return errClosed
	}
	if b.started {
		return errors.New("zeromq: Start called twice")
	}
	if err := b.check(subs); err != nil {
		// Nothing started: Shutdown closes what Publish opened, as
		// without a Start.
		return err
	}
	b.started = true
	env = env.Complete()
	if b.cfg.logger == nil {
		b.log = env.Logger
	}
	b.clock = env.Clock
	b.codec.Adopt(env.Codec)
	// Handlers keep the values of ctx, but not its end: the App ends ctx
	// before it calls Shutdown, which lets them finish.
	b.work, b.endWork = context.WithCancel(context.WithoutCancel(ctx))

	var started []*subscriber
	fail := func(err error) error {
		// The App does not shut down a broker that failed to start.
		for _, s := range started {
			s.stopReceiving()
		}
		// What Publish accepted for a ventilator is lost with it.
		gone, cancel := context.WithCancel(context.Background())
		cancel()
		for name, s := range b.senders {
			if err := s.close(gone); err != nil {
				b.log.Warn("zeromq: a queue was closed because the broker did not start", "queue", name, "err", err)
			}
		}
		clear(b.subs)
		clear(b.senders)
		b.stopping, b.closed = true, true
		b.endWork()
		return err
	}
	for _, sub := range subs {
		s := newSubscriber(b, sub, env, b.cfg.queues[sub.Name])
		if err := s.recv.start(); err != nil {
			return fail(err)
		}
		b.subs[sub.Name] = s
		started = append(started, s)
	}
	if err := b.listenVentilators(); err != nil {
		return fail(err)
	}
	for _, s := range started {
		for range s.c.Subscription().Workers() {
			s.workers.Go(func() {
				for in := range s.incoming {
					s.handle(b.work, in)
					s.recv.release(in)
				}
			})
		}
	}
	return nil
}

// Listen binds the ventilators declared on the broker (Start does it too),
// so that workers can dial in before the first Publish. A service that only
// sends calls it at startup to learn of a bind error at once.
func (b *Broker) Listen() error {
	if b.cfgErr != nil {
		return b.cfgErr
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopping {
		return errClosed
	}
	return b.listenVentilators()
}

// listenVentilators binds the ventilators not bound yet. b.mu must be held.
func (b *Broker) listenVentilators() error {
	for _, name := range slices.Sorted(maps.Keys(b.cfg.queues)) {
		q := b.cfg.queues[name]
		if q.ep.role != roleVentilator || b.senders[name] != nil {
			continue
		}
		v, err := b.listenVentilator(q)
		if err != nil {
			return err
		}
		b.senders[name] = v
	}
	return nil
}

// listenVentilator binds the ventilator of queue q.
func (b *Broker) listenVentilator(q *queueConfig) (ventSender, error) {
	v, err := zmtp.ListenVentilator(zmtp.VentilatorConfig{
		Name: q.name, Network: q.network, Address: q.address, Endpoint: q.ep.addr,
		QueueSize: q.outboxLimit(), MaxConnections: q.connectionLimit(), Hint: "raise it with zeromq.MaxConnections",
		Clock: b.clock, Log: b.log,
	})
	if err != nil {
		return ventSender{}, fmt.Errorf("zeromq: queue %q: bind ventilator at %s: %w", q.name, q.ep.addr, err)
	}
	return ventSender{v}, nil
}

// check returns every startup error of the subscriptions, each naming its
// subscription.
func (b *Broker) check(subs []*runtime.Subscription) error {
	var errs []error
	seen := map[string]bool{}
	for _, sub := range subs {
		if seen[sub.Name] {
			continue // runtime.App.Run refuses a subscription mounted twice
		}
		seen[sub.Name] = true
		q := b.cfg.queues[sub.Name]
		if q != nil && q.maxInFlightBytes > 0 && q.maxInFlightBytes < q.messageLimit(sub) {
			errs = append(errs, fmt.Errorf("zeromq: subscription %q: MaxInFlightBytes is %d, less than the largest message the queue takes (%d bytes, its MaxMessageBytes or max_payload_bytes plus 1 MiB): raise it with zeromq.MaxInFlightBytes, or lower the message bound", sub.Name, q.maxInFlightBytes, q.messageLimit(sub)))
		}
		switch {
		case q == nil:
			errs = append(errs, fmt.Errorf("zeromq: subscription %q has no endpoint: declare it with zeromq.Queue(%q, zeromq.Bind(\"tcp://host:port\")) to bind it, or zeromq.Dial(...) to dial a ventilator", sub.Name, sub.Name))
			continue
		case q.ep.role == roleVentilator:
			errs = append(errs, fmt.Errorf("zeromq: subscription %q: its queue is declared with zeromq.Ventilator, which sends; a subscription reads with zeromq.Bind or zeromq.Dial", sub.Name))
			continue
		}
		for _, h := range sub.Handlers {
			switch dest := h.Policy.OutRetry; {
			case dest == sub.Name && q.ep.role == roleDial:
				errs = append(errs, fmt.Errorf("zeromq: subscription %q dials a ventilator at %s, so its retry copies cannot go back into it (out_retry=self): set out_retry=<queue> to a queue this service binds, and mount the same handler there", sub.Name, q.ep.addr))
			case dest != "" && dest != sub.Name:
				if err := b.checkDestination(sub.Name, "out_retry", dest); err != nil {
					errs = append(errs, err)
				}
			}
			if dl := h.Policy.DeadLetter; dl != "" {
				if err := b.checkDestination(sub.Name, "dead_letter", dl); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// checkDestination checks that the queue a subscription sends copies to
// can be sent to.
func (b *Broker) checkDestination(sub, key, queue string) error {
	q := b.cfg.queues[queue]
	switch {
	case q == nil:
		return fmt.Errorf("zeromq: subscription %q: %s=%s has no endpoint: declare it with zeromq.Queue(%q, zeromq.Bind(\"tcp://host:port\")) where its reader binds, or zeromq.Ventilator(...) to hand copies to dialing workers", sub, key, queue, queue)
	case q.ep.role == roleDial:
		return fmt.Errorf("zeromq: subscription %q: %s=%s is declared with zeromq.Dial, so its readers dial a ventilator and nothing can be sent to it from here: declare it with zeromq.Bind or zeromq.Ventilator", sub, key, queue)
	}
	return nil
}

// Publish sends msg to queue: to the endpoint its reader binds (Bind), or
// to one of the workers dialled in to this service's ventilator
// (Ventilator). Like a ZeroMQ PUSH socket, it waits until the message can be
// sent or ctx ends.
//
// ZeroMQ has no exchanges: a message with an Exchange or a RoutingKey
// (runtime.Exchange, runtime.WithRoutingKey) is an error.
func (b *Broker) Publish(ctx context.Context, queue string, msg runtime.Message) error {
	if err := adapter.CheckMessage(runtime.ZeroMQ, msg); err != nil {
		return fmt.Errorf("zeromq: publish to %q: %w", queue, err)
	}
	env, err := envelopeOf(queue, msg)
	if err != nil {
		return fmt.Errorf("zeromq: publish to %q: %w", queue, err)
	}
	return b.sendEnvelope(ctx, queue, env)
}

// envelopeOf frames a message for queue: the headers type, content-type,
// message-id and the message properties (when set), then the application
// headers sorted by name. The message has passed adapter.CheckMessage.
func envelopeOf(queue string, msg runtime.Message) (*Envelope, error) {
	env := &Envelope{Subscription: queue, Body: msg.Body}
	props := []Header{{HeaderType, msg.Type}, {HeaderContentType, msg.ContentType}, {HeaderMessageID, msg.ID},
		{HeaderCorrelationID, msg.CorrelationID}, {HeaderReplyTo, msg.ReplyTo}, {HeaderAppID, msg.AppID}}
	if msg.Priority != 0 {
		props = append(props, Header{HeaderPriority, strconv.Itoa(int(msg.Priority))})
	}
	if !msg.Timestamp.IsZero() {
		props = append(props, Header{HeaderTimestamp, msg.Timestamp.UTC().Format(time.RFC3339Nano)})
	}
	for _, h := range props {
		if h.Value != "" {
			env.Headers = append(env.Headers, h)
		}
	}
	app := make([]Header, 0, len(msg.Headers))
	for name, value := range msg.Headers {
		app = append(app, Header{Name: strings.ToLower(name), Value: value})
	}
	slices.SortFunc(app, func(a, b Header) int { return strings.Compare(a.Name, b.Name) })
	env.Headers = append(env.Headers, app...)
	return env, nil
}

// sendEnvelope frames env and sends it to queue: it returns once the
// message is written to a connection (a bound queue) or handed to a worker
// (a ventilator), which Shutdown then flushes.
func (b *Broker) sendEnvelope(ctx context.Context, queue string, env *Envelope) error {
	frames, err := env.Frames()
	if err != nil {
		return fmt.Errorf("zeromq: send to %q: %w", queue, err)
	}
	s, err := b.senderFor(queue)
	if err != nil {
		return err
	}
	return s.send(ctx, frames, nil)
}

// sendCopy frames env, a retry copy or a dead letter, and puts it in the
// outbox of queue, so that a queue that does not answer holds back no
// subscription. It returns at once unless the outbox is full: then it warns
// and waits for room until ctx ends. A copy to a queue this service reads
// itself does not wait: the subscriptions that would wait for room are the
// ones that make it, so it waits for room in a goroutine of its own. done
// is called once: with nil when the copy is written (or handed to a worker
// of this service's ventilator), or with the error that lost it, such as a
// shutdown deadline passed while it still waited in the outbox.
func (b *Broker) sendCopy(ctx context.Context, queue string, env *Envelope, done func(error)) {
	frames, err := env.Frames()
	if err != nil {
		done(fmt.Errorf("zeromq: send to %q: %w", queue, err))
		return
	}
	o, local, err := b.outboxFor(queue)
	if err != nil {
		done(err)
		return
	}
	o.put(ctx, copyItem{frames: frames, done: done}, !local)
}

// outboxFor returns the outbox of queue, making it on first use, and
// whether a subscription of this broker reads the queue.
func (b *Broker) outboxFor(queue string) (*outbox, bool, error) {
	if b.cfgErr != nil {
		return nil, false, b.cfgErr
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	local := b.subs[queue] != nil
	if o := b.outboxes[queue]; o != nil {
		return o, local, nil
	}
	if b.flushing {
		return nil, local, errClosed
	}
	s, err := b.senderLocked(queue)
	if err != nil {
		return nil, local, err
	}
	o := newOutbox(queue, s, b.cfg.queues[queue].outboxLimit(), b.log)
	b.outboxes[queue] = o
	return o, local, nil
}

// senderFor returns the sender of queue, making it on first use.
func (b *Broker) senderFor(queue string) (sender, error) {
	if b.cfgErr != nil {
		return nil, b.cfgErr
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.senderLocked(queue)
}

// senderLocked is senderFor with b.mu held.
func (b *Broker) senderLocked(queue string) (sender, error) {
	if b.closed {
		return nil, errClosed
	}
	if s := b.senders[queue]; s != nil {
		return s, nil
	}
	q := b.cfg.queues[queue]
	if q == nil {
		return nil, fmt.Errorf("zeromq: no endpoint for queue %q: declare it with zeromq.Queue(%q, zeromq.Bind(\"tcp://host:port\"))", queue, queue)
	}
	var s sender
	switch q.ep.role {
	case roleBind:
		target := func() (string, string, error) {
			b.mu.Lock()
			local := b.subs[queue]
			b.mu.Unlock()
			if local == nil {
				return q.network, q.address, nil
			}
			network, address, err := local.target()
			if err != nil {
				return "", "", errReaderStopped
			}
			return network, address, nil
		}
		s = pushSender{zmtp.NewPusher(queue, target, b.clock, b.log)}
	case roleVentilator:
		v, err := b.listenVentilator(q)
		if err != nil {
			return nil, err
		}
		s = v
	default:
		return nil, fmt.Errorf("zeromq: cannot send to queue %q: it is declared with zeromq.Dial, so its readers dial a ventilator; the sending service declares it with zeromq.Ventilator", queue)
	}
	b.senders[queue] = s
	return s, nil
}

// Addr returns the endpoint queue is bound at in this service (a
// subscription's queue declared with Bind, or a ventilator), with the port
// the system picked for port 0; "" when this service binds no such queue.
func (b *Broker) Addr(queue string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var a net.Addr
	if s := b.subs[queue]; s != nil {
		a = s.addr()
	} else if v, ok := b.senders[queue].(ventSender); ok {
		a = v.v.Addr()
	}
	if a == nil {
		return ""
	}
	return zmtp.Endpoint(a)
}

// Connections returns how many peers are connected to queue's sockets in
// this service: senders to a bound subscription, the ventilator for a
// dialing one, workers to a ventilator, the reader for a queue published to.
func (b *Broker) Connections(queue string) int {
	b.mu.Lock()
	sub, snd := b.subs[queue], b.senders[queue]
	b.mu.Unlock()
	n := 0
	if sub != nil {
		n += sub.recv.connections()
	}
	if snd != nil {
		n += snd.connections()
	}
	return n
}

// Shutdown stops gracefully, everything while ctx lasts: it stops
// receiving, lets the workers finish the messages already received
// (in-flight handlers included), reports the retry copies still waiting for
// their delay (ZeroMQ stores nothing: they are lost), sends the copies in
// the outboxes, and flushes what Publish handed to a ventilator. When ctx
// ends first, it cancels the handlers' context, reports each copy still in
// an outbox as lost, counts what is lost per queue in a warning, and
// returns an error saying so. Then it closes every socket. Shutdown may be
// called without Start, to close the sockets of a service that only
// publishes.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	if b.stopping {
		b.mu.Unlock()
		return nil
	}
	b.stopping = true
	started := b.started
	subs := slices.Collect(maps.Values(b.subs))
	b.mu.Unlock()

	var errs []error
	if started {
		stop := context.AfterFunc(ctx, b.endWork)
		defer stop()
		errs = b.stopSubscriptions(ctx, subs)
	}
	errs = append(errs, b.flushOutboxes(ctx)...)
	if started {
		b.endWork()
	}
	b.mu.Lock()
	b.closed = true
	names := slices.Sorted(maps.Keys(b.senders))
	senders := b.senders
	b.mu.Unlock()
	for _, name := range names {
		if err := senders[name].close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stopSubscriptions stops receiving, waits for the workers and the retry
// copies while ctx lasts, and reports the copies that are lost.
func (b *Broker) stopSubscriptions(ctx context.Context, subs []*subscriber) []error {
	for _, s := range subs {
		s.stopReceiving()
		s.c.Drain() // a batch in hand is handled now, not after its wait
	}
	var errs []error
	for _, s := range subs {
		if err := wait.Group(ctx, &s.workers); err != nil {
			errs = append(errs, fmt.Errorf("zeromq: subscription %q: in-flight handlers did not finish: %w", s.name, err))
		}
	}
	for _, s := range subs {
		s.c.Stop() // each copy still waiting for its delay is settled as lost, and logged
		if err := s.c.WaitCopies(ctx); err != nil {
			errs = append(errs, fmt.Errorf("zeromq: subscription %q: shutdown deadline passed with %s still being sent: %w", s.name, s.unsettledCopies(), err))
		}
	}
	return errs
}

// flushOutboxes waits while ctx lasts for the copies in every outbox to be
// sent, then gives up on the rest: each is reported lost to its sender,
// and one warning per queue counts them.
func (b *Broker) flushOutboxes(ctx context.Context) []error {
	b.mu.Lock()
	b.flushing = true
	names := slices.Sorted(maps.Keys(b.outboxes))
	outboxes := b.outboxes
	b.mu.Unlock()
	var errs []error
	for _, name := range names {
		if lost := outboxes[name].flush(ctx); lost > 0 {
			b.log.Warn("zeromq: copies were still in the outbox of a queue that did not take them in time; they are lost (ZeroMQ stores nothing)",
				"queue", name, "lost", lost, "err", ctx.Err())
			errs = append(errs, fmt.Errorf("zeromq: queue %q: the shutdown deadline passed with %s still in its outbox, lost: %w", name, copiesOf(0, int64(lost)), ctx.Err()))
		}
	}
	return errs
}

var (
	_ runtime.Broker                     = (*Broker)(nil)
	_ runtime.Publisher                  = (*Broker)(nil)
	_ interface{ Codec() runtime.Codec } = (*Broker)(nil)
)
