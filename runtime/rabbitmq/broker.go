package rabbitmq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/internal/wait"
	"github.com/streamgen/streamgen/runtime/observe"
)

// Broker runs subscriptions on a RabbitMQ broker, or a cluster of them,
// and publishes to it. It is a runtime.Broker and a runtime.Publisher:
//
//	rb := rabbitmq.New("amqp://guest:guest@127.0.0.1:5672/", rabbitmq.WithConnectionName("billing"))
//	orders.Mount(app, rb)
//	err := app.Run(ctx)
//
// Publish works without an App: it connects on first use. A Broker serves
// one App run; after Shutdown (or Close) it publishes no more.
type Broker struct {
	opts   options
	dialer *dialer
	blocks *blockState
	user   string // the URLs' user name: copies keep a user-id property only if it is this one
	pub    *publisher
	req    *Requester // Request's, connected on first use
	// version is the RabbitMQ version last connected to, as text.
	version atomic.Value

	stopping chan struct{} // closed when Shutdown begins

	mu         sync.Mutex
	state      brokerState
	log        *slog.Logger
	clock      clock.Clock
	codec      adapter.PublishCodec
	env        runtime.Env
	runners    []*runner
	sess       *session
	runCtx     context.Context    // ends when Shutdown begins
	stopRun    context.CancelFunc // ends runCtx
	abort      context.CancelFunc // cancels the handlers' context
	handlerCtx context.Context
	supervised chan struct{} // closed when the reconnect supervisor returns
	// notReady says why the Broker does not consume while it reconnects;
	// "" while a session is installed.
	notReady string
}

type brokerState uint8

const (
	stateNew brokerState = iota
	stateRunning
	stateStopped
)

var _ interface {
	runtime.Broker
	runtime.Publisher
	Codec() runtime.Codec
	Ready() (bool, string)
	Warnings() []string
} = (*Broker)(nil)

// New returns a Broker for the broker at url (amqp:// or amqps://), or for
// the nodes of a cluster given as a comma list of such URLs:
//
//	rabbitmq.New("amqp://app:pw@rabbit-1:5672/,amqp://app:pw@rabbit-2:5672/,amqp://app:pw@rabbit-3:5672/")
//
// Every address must use the same user. The Broker shuffles the list once
// (WithAddressesInOrder keeps it as given), connects to the first address
// that answers, and on each reconnect starts at the address after the one
// it was connected to, so it moves off a node that went away. Its
// consuming and publishing connections each fail over on their own. New
// does not connect yet: Start does, or the first Publish. No password, of
// any address, ever appears in a log or an error.
func New(url string, opts ...Option) *Broker {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	log := o.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	name := o.connectionName
	if name == "" {
		name = DefaultConnectionName
	}
	b := &Broker{
		opts:     o,
		stopping: make(chan struct{}),
		dialer:   newDialer(url, o.tls, name, o.inOrder),
		blocks:   newBlockState(),
		log:      log,
		clock:    clock.System{},
		codec:    adapter.NewPublishCodec(o.codec),
	}
	b.user = b.dialer.user
	b.dialer.handshake = o.handshake
	b.dialer.log = b.logger
	b.pub = newPublisher(b.dial, o.confirmTimeout, o.publishWindow, b.blocks, log)
	b.req = newRequester(b.dialer, b.logger, b.Codec)
	return b
}

// Kind returns runtime.RabbitMQ.
func (b *Broker) Kind() runtime.BrokerKind { return runtime.RabbitMQ }

// Codec returns the codec runtime.Publish encodes with on this Broker: the
// one given WithCodec, else the App's once started, else JSON.
func (b *Broker) Codec() runtime.Codec { return b.codec.Codec() }

// dial opens a connection in role with the current connection name.
func (b *Broker) dial(ctx context.Context, role string) (*connection, error) {
	return b.dialer.dial(ctx, role)
}

func (b *Broker) logger() *slog.Logger {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.log
}

// Blocked reports whether the broker blocks one of the Broker's
// connections, and why in the broker's words, as "publish: low on memory"
// (several joined by "; "). RabbitMQ blocks connections that publish while
// a memory or disk alarm is in force: retry copies, dead letters and
// Publish wait until it clears, or fail once their confirm timeout passes.
// A health check or a metric can show it; the Broker also logs each
// connection.blocked and connection.unblocked.
func (b *Broker) Blocked() (reason string, blocked bool) {
	return b.blocks.blocked()
}

// Warnings reports, for App.Health, what holds retries back while the
// Broker still consumes: while the broker blocks the publishing connection
// (see Blocked), each subscription whose retry copies and dead letters
// await their confirm, and how many of its prefetch slots their originals
// hold; and each wait queue whose retry copies are overdue by 30 s or
// more with none coming back (the Broker logs a warning when that begins,
// and when they come back).
func (b *Broker) Warnings() []string {
	b.mu.Lock()
	runners := b.runners
	b.mu.Unlock()
	var out []string
	if reason, blocked := b.blocks.blocked(); blocked {
		for _, r := range runners {
			if n := len(r.copies); n > 0 {
				out = append(out, fmt.Sprintf("%d copies of %q await their confirm while the broker blocks publishing (%s); their originals hold %d of its %d prefetch slots until the alarm clears",
					n, r.sub.Name, reason, n, r.prefetch))
			}
		}
	}
	return append(out, b.checkWaits()...)
}

// checkWaits looks for wait queues whose copies stopped coming back (see
// waitWatch), logging those that stalled since the last look, and returns
// a warning for each.
func (b *Broker) checkWaits() []string {
	b.mu.Lock()
	runners, now := b.runners, b.clock.Now()
	b.mu.Unlock()
	var out []string
	for _, r := range runners {
		if r.waits != nil {
			out = append(out, r.waits.check(now)...)
		}
	}
	return out
}

// Publish sends msg to the queue of that name through the default
// exchange: persistent, mandatory, with publisher confirms. It returns once
// the broker confirmed it, or an error wrapping ErrUnroutable (no such
// queue), ErrNacked, ErrNoConfirm, ErrChannelClosed or ErrClosed.
// Generated typed publishers call it through runtime.Publish.
//
// A message with an Exchange (runtime.Publish to a runtime.Exchange) goes through that
// exchange, with queue as its routing key; msg.RoutingKey, when set,
// replaces queue either way. It is mandatory too unless
// msg.AllowUnroutable: a message no queue is bound for is an error
// wrapping ErrUnroutable.
func (b *Broker) Publish(ctx context.Context, queue string, msg runtime.Message) error {
	b.mu.Lock()
	now := b.clock.Now()
	b.mu.Unlock()
	if msg.Exchange != "" || msg.RoutingKey != "" || msg.AllowUnroutable {
		return b.publishTo(ctx, queue, msg, now)
	}
	return publishError(msg.Type, queue, b.publishConfirmed(ctx, queue, publishingOf(msg, now)))
}

// publishTo publishes msg through its exchange (see Publish).
func (b *Broker) publishTo(ctx context.Context, queue string, msg runtime.Message, now time.Time) error {
	key := cmp.Or(msg.RoutingKey, queue)
	err := b.pub.publishTo(ctx, msg.Exchange, key, !msg.AllowUnroutable, publishingOf(msg, now))
	return routeError(msg.Type, msg.Exchange, key, err)
}

// routeError is what Publish returns for the outcome err of a message of
// type msgType sent through exchange with routing key key (publishTo).
func routeError(msgType, exchange, key string, err error) error {
	to := runtime.Destination{Exchange: exchange, Key: key}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrUnroutable) && exchange != "":
		return fmt.Errorf("rabbitmq: publish %s to %s: %w: no queue is bound to exchange %q for routing key %q (a subscription with exchange=%s and a binding that matches the key binds one when it starts); to let the broker drop it, publish with runtime.AllowUnroutable()", msgType, to, err, exchange, key, exchange)
	case errors.Is(err, ErrUnroutable):
		return unroutableQueue(msgType, key, err)
	}
	return fmt.Errorf("rabbitmq: publish %s to %s: %w", msgType, to, err)
}

// publishConfirmed publishes msg through the hardened publish and, when
// the App that started the Broker has an Observer, reports how long the
// broker took to confirm it.
func (b *Broker) publishConfirmed(ctx context.Context, queue string, msg amqp.Publishing) error {
	b.mu.Lock()
	env := b.env
	b.mu.Unlock()
	if !env.Observing() {
		return b.pub.publish(ctx, queue, msg)
	}
	start := time.Now()
	err := b.pub.publish(ctx, queue, msg)
	env.Report(observe.Event{Kind: observe.Confirmed, Broker: string(runtime.RabbitMQ), Duration: time.Since(start), Err: err})
	return err
}

// confirmReporter returns what reports how long the broker took to
// confirm a publish started now, for the App's Observer; nil when the App
// has none.
func (b *Broker) confirmReporter() func(error) {
	b.mu.Lock()
	env := b.env
	b.mu.Unlock()
	if !env.Observing() {
		return nil
	}
	start := time.Now()
	return func(err error) {
		env.Report(observe.Event{Kind: observe.Confirmed, Broker: string(runtime.RabbitMQ), Duration: time.Since(start), Err: err})
	}
}

// Ready reports whether the Broker consumes: not before Start, not while
// it reconnects after its consuming connection was lost (the reason then
// says why), and not once it stops. App.Health asks it.
func (b *Broker) Ready() (bool, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.state == stateNew:
		return false, "not started"
	case b.state == stateStopped:
		return false, "stopped"
	case b.notReady != "":
		return false, b.notReady
	case b.sess == nil:
		return false, "connecting"
	}
	return true, ""
}

// setNotReady records why the Broker does not consume.
func (b *Broker) setNotReady(reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.notReady = reason
}

// Start connects, declares every queue the subscriptions need, and starts
// consuming, with the subscriptions runtime.App.Run checked. It returns a
// startup error when the broker cannot be reached, or a queue exists with
// other arguments (see TopologyError).
// Once started, the Broker reconnects by itself after a connection loss.
func (b *Broker) Start(ctx context.Context, env runtime.Env, subs []*runtime.Subscription) error {
	env = env.Complete()
	b.mu.Lock()
	if b.state != stateNew {
		b.mu.Unlock()
		return errors.New("rabbitmq: Start called on a Broker that was started or closed before: make a new Broker")
	}
	b.state = stateRunning
	b.env = env
	if b.opts.logger == nil {
		b.log = env.Logger
	}
	b.clock = env.Clock
	b.codec.Adopt(env.Codec)
	if b.opts.connectionName == "" && env.App != "" {
		b.dialer.setConnectionName(env.App)
	}
	for _, sub := range subs {
		b.runners = append(b.runners, newRunner(b, sub, env))
	}
	base := context.WithoutCancel(ctx)
	b.runCtx, b.stopRun = context.WithCancel(base)
	runCtx := b.runCtx
	b.handlerCtx, b.abort = context.WithCancel(base)
	b.supervised = make(chan struct{})
	log := b.log
	b.mu.Unlock()
	b.pub.use(env.Clock, log)

	sess, err := b.connect(ctx, log)
	if err != nil {
		b.stopRun()
		b.abort()
		close(b.supervised)
		_ = b.pub.close(ctx)
		b.mu.Lock()
		b.state = stateStopped
		b.mu.Unlock()
		return err
	}
	if !b.install(sess) {
		// Shutdown began while starting; it finds the session installed or
		// not at all, so close this one here.
		_ = sess.close(ctx)
	}
	go b.supervise(runCtx, sess)
	log.Info("rabbitmq: consuming", "url", sess.conn.addr, "subscriptions", len(b.runners))
	return nil
}

// connect opens the first consuming session and the publishing channel.
// With WaitForBroker it tries again while no address answers, until its
// bound passes or ctx ends.
func (b *Broker) connect(ctx context.Context, log *slog.Logger) (*session, error) {
	bound := b.opts.waitForBroker
	start := time.Now()
	retry := b.opts.backoff
	retry.max = min(retry.max, maxStartupDelay)
	retry.min = min(retry.min, retry.max)
	for n := 1; ; n++ {
		sess, err := b.openSession(ctx)
		if err == nil {
			if _, err = b.pub.channel(ctx); err != nil {
				_ = sess.close(ctx)
			}
		}
		var unreachable unreachableError
		if err == nil || bound == 0 || ctx.Err() != nil || !errors.As(err, &unreachable) {
			return sess, err
		}
		waited := time.Since(start)
		if waited >= bound {
			return nil, fmt.Errorf("rabbitmq: the broker did not answer within %s (WaitForBroker), after %d tries: %w", bound, n, err)
		}
		delay := min(retry.delay(n), bound-waited)
		log.Warn("rabbitmq: the broker does not answer yet; waiting for it",
			"url", b.dialer.redacted, "attempt", n, "waited", waited.Round(time.Millisecond), "wait_up_to", bound, "err", err)
		b.setNotReady(fmt.Sprintf("waiting for the broker: attempt %d failed: %v", n, err))
		if err := wait.Sleep(ctx, b.clock, delay); err != nil {
			return nil, fmt.Errorf("rabbitmq: waiting for the broker: %w", err)
		}
	}
}

// maxStartupDelay caps the delay between two tries of WaitForBroker, so a
// broker that comes up is found soon.
const maxStartupDelay = 5 * time.Second

// install makes s the current session and starts handing its deliveries to
// the workers, unless Shutdown has begun.
func (b *Broker) install(s *session) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.stopping:
		return false
	default:
	}
	b.sess = s
	b.notReady = ""
	s.start()
	return true
}

// supervise reopens the consuming session each time it is lost, until
// runCtx ends.
func (b *Broker) supervise(runCtx context.Context, sess *session) {
	defer close(b.supervised)
	tick := time.NewTicker(min(max(b.opts.stallAfter/4, 100*time.Millisecond), 5*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-runCtx.Done():
			return
		case <-tick.C:
			b.checkWaits()
			continue
		case <-sess.lost:
		}
		b.log.Warn("rabbitmq: consuming was interrupted; reconnecting", "url", sess.conn.addr, "err", sess.cause())
		b.setNotReady(fmt.Sprintf("consuming was interrupted; reconnecting: %v", sess.cause()))
		closeCtx, cancel := context.WithTimeout(runCtx, closeTimeout)
		_ = sess.close(closeCtx)
		cancel()
		next, err := b.reconnect(runCtx)
		if err != nil {
			return
		}
		sess = next
	}
}

// reconnect opens and installs a new session, waiting between attempts as
// the backoff says. A TopologyError is not retried: the Broker fails the
// App with it.
func (b *Broker) reconnect(runCtx context.Context) (*session, error) {
	for n := 1; ; n++ {
		if err := wait.Sleep(runCtx, b.clock, b.opts.backoff.delay(n)); err != nil {
			return nil, err
		}
		s, err := b.openSession(runCtx)
		if err == nil {
			if !b.install(s) {
				_ = s.close(runCtx)
				return nil, ErrClosed
			}
			b.log.Info("rabbitmq: reconnected; consuming again", "url", s.conn.addr, "attempts", n)
			b.env.Report(observe.Event{Kind: observe.Reconnected, Broker: string(runtime.RabbitMQ)})
			return s, nil
		}
		if runCtx.Err() != nil {
			return nil, runCtx.Err()
		}
		var te *TopologyError
		if errors.As(err, &te) {
			b.env.Fail(err)
			return nil, err
		}
		b.log.Warn("rabbitmq: reconnect failed; trying again", "url", b.dialer.redacted, "attempt", n, "err", err)
		b.setNotReady(fmt.Sprintf("reconnecting: attempt %d failed: %v", n, err))
	}
}

// Shutdown stops consuming (basic.cancel), lets the handlers already
// running finish and settle their deliveries, hands deliveries that were
// received but not started back to the broker, then closes the
// connections. When ctx ends first, the running handlers' context is
// cancelled and their deliveries are left to the broker, which requeues
// them as the connection closes; Shutdown then returns ctx's error. A
// connection that does not close before ctx ends (the broker reads
// nothing from a connection it blocks, see Blocked) is dropped, and
// Shutdown returns an error saying so: it never outlasts ctx by more than
// the time to drop the connections.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	state := b.state
	b.state = stateStopped
	select {
	case <-b.stopping:
		b.mu.Unlock()
		return nil
	default:
		close(b.stopping)
	}
	b.mu.Unlock()
	if state != stateRunning {
		_ = b.req.Close()
		if err := b.pub.close(ctx); err != nil {
			return fmt.Errorf("rabbitmq: close: %w: %s", context.Cause(ctx), err)
		}
		return nil
	}
	b.stopRun()
	for _, r := range b.runners {
		r.c.Stop() // a pause before a requeue ends now, and a batch in hand is handled
	}
	<-b.supervised
	b.mu.Lock()
	sess := b.sess
	b.mu.Unlock()

	var errs []error
	if wait.Do(ctx, func() {
		if sess != nil {
			sess.cancelConsumers(b.log)
		}
		for _, r := range b.runners {
			r.waitPumps()
		}
	}) != nil {
		errs = append(errs, errors.New("handlers still running were cancelled; their deliveries are left to the broker"))
	} else if waitCopies(ctx, b.runners) != nil {
		errs = append(errs, errors.New("copies still awaiting their confirm were given up; their originals are left to the broker"))
	}
	b.abort()
	if sess != nil {
		if err := sess.close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	_ = b.req.Close() // once the handlers, which may send requests, are done
	if err := b.pub.close(ctx); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("rabbitmq: shutdown: %w: %s", context.Cause(ctx), strings.Join(msgs, "; "))
	}
	b.log.Info("rabbitmq: stopped", "url", b.dialer.redacted)
	return nil
}

// Close shuts the Broker down without a deadline. A Broker used only to
// publish calls it when done.
func (b *Broker) Close() error {
	return b.Shutdown(context.Background())
}
