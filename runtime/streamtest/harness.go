package streamtest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
)

// Harness runs an App in process on an emulated Broker and a fake Clock,
// for one test. Make it with New, Mount the subscriptions on App and Broker,
// Start it, publish, then Wait or Advance and look at Deliveries, Queue and
// Logs. The test's cleanup waits for idle, stops the App and fails the test
// when the App's run ended with an error.
//
// Methods that fail the test (Start, Wait, Advance, Publish) must be called
// from the test's goroutine.
type Harness struct {
	t           testing.TB
	broker      *Broker
	clock       *Clock
	app         *runtime.App
	logs        *LogRecorder
	waitTimeout time.Duration

	run *appRun // set by Start
}

// Option configures a Harness.
type Option func(*config)

type config struct {
	forward         slog.Handler
	quiet           bool
	codec           runtime.Codec
	start           time.Time
	waitTimeout     time.Duration
	shutdownTimeout time.Duration
	name            string
	broker          []BrokerOption
	app             []runtime.Option
	outboxes        []*outbox.Outbox
}

// WithLogger sends every log record to l's handler as well (the Harness
// records them all in any case; see Harness.Logs). By default records at
// Info level and above go to the test's output.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.forward = l.Handler() }
}

// WithQuietLogs keeps log records out of the test's output; Harness.Logs
// still has them.
func WithQuietLogs() Option { return func(c *config) { c.quiet = true } }

// WithCodec sets the App's codec; the default is JSON.
func WithCodec(codec runtime.Codec) Option { return func(c *config) { c.codec = codec } }

// WithStart sets the fake clock's first time; the default is DefaultStart.
func WithStart(t time.Time) Option { return func(c *config) { c.start = t } }

// WithWaitTimeout bounds, in real time, how long Wait and Advance wait for
// the broker to become idle before failing the test; the default is one
// minute.
func WithWaitTimeout(d time.Duration) Option { return func(c *config) { c.waitTimeout = d } }

// WithShutdownTimeout sets the App's shutdown timeout (real time); the
// default is ten seconds.
func WithShutdownTimeout(d time.Duration) Option {
	return func(c *config) { c.shutdownTimeout = d }
}

// WithRetryCountHeader makes the emulated broker carry the retry count in
// the named header, as zeromq.WithRetryCountHeader does.
func WithRetryCountHeader(name string) Option {
	return func(c *config) { c.broker = append(c.broker, RetryCountHeader(name)) }
}

// WithRabbitMQVersion makes the broker emulate the queues of RabbitMQ
// major.minor (RabbitMQVersion): WithRabbitMQVersion(4, 3) runs the
// retries of a quorum subscription through its queue's own delayed retry,
// as the real adapter does there.
func WithRabbitMQVersion(major, minor int) Option {
	return func(c *config) { c.broker = append(c.broker, RabbitMQVersion(major, minor)) }
}

// WithAppOptions gives the App more options, after the Harness's own:
// runtime.WithMiddleware, runtime.WithObserver, runtime.OnStart and the
// like, so that a test runs its handlers as the service does.
func WithAppOptions(opts ...runtime.Option) Option {
	return func(c *config) { c.app = append(c.app, opts...) }
}

// WithAppName sets the App's name; the default is "streamtest".
func WithAppName(name string) Option { return func(c *config) { c.name = name } }

// New returns a Harness emulating a broker of the given kind
// (runtime.RabbitMQ or runtime.ZeroMQ).
func New(t testing.TB, kind runtime.BrokerKind, opts ...Option) *Harness {
	t.Helper()
	cfg := config{
		codec:           runtime.JSON{},
		waitTimeout:     time.Minute,
		shutdownTimeout: 10 * time.Second,
		name:            "streamtest",
	}
	for _, o := range opts {
		o(&cfg)
	}
	forward := cfg.forward
	if forward == nil && !cfg.quiet {
		forward = slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo})
	}
	clock := NewClock(cfg.start)
	h := &Harness{
		t:           t,
		broker:      NewBroker(kind, clock, cfg.broker...),
		clock:       clock,
		logs:        NewLogRecorder(forward),
		waitTimeout: cfg.waitTimeout,
	}
	h.broker.setCodec(cfg.codec)
	appOpts := []runtime.Option{
		runtime.WithLogger(h.logs.Logger()),
		runtime.WithClock(clock),
		runtime.WithCodec(cfg.codec),
		runtime.WithShutdownTimeout(cfg.shutdownTimeout),
	}
	for _, ob := range cfg.outboxes {
		appOpts = append(appOpts, ob.Option(h.broker))
		h.broker.feeders = append(h.broker.feeders, outboxFeeder(ob, ob.Relay(h.broker)))
	}
	h.app = runtime.NewApp(cfg.name, append(appOpts, cfg.app...)...)
	t.Cleanup(h.cleanup)
	return h
}

// App returns the App to mount subscriptions on.
func (h *Harness) App() *runtime.App { return h.app }

// Broker returns the emulated broker: a runtime.Broker to mount on and a
// runtime.Publisher to publish with.
func (h *Harness) Broker() *Broker { return h.broker }

// Clock returns the fake clock.
func (h *Harness) Clock() *Clock { return h.clock }

// Logs returns the recorder of everything the App and its broker logged.
func (h *Harness) Logs() *LogRecorder { return h.logs }

// Now returns the fake clock's time.
func (h *Harness) Now() time.Time { return h.clock.Now() }

// Start runs the App in the background and returns once every subscription
// consumes. It fails the test when the App does not start (nothing mounted,
// an invalid subscription, ...).
func (h *Harness) Start() {
	h.t.Helper()
	if h.run != nil {
		h.t.Fatal("streamtest: Start called twice")
	}
	run, err := startApp(context.WithoutCancel(h.t.Context()), h.app, h.waitTimeout)
	h.run = run
	if err != nil {
		h.t.Fatal(err)
	}
}

// Stop stops the App gracefully and returns what its Run returned. The
// test's cleanup calls it when the test did not.
func (h *Harness) Stop() error {
	if h.run == nil {
		return nil
	}
	h.run.cancel()
	<-h.run.done
	return h.run.err
}

// Publish encodes v with the App's codec and publishes it to queue as a
// message of type messageType, as a generated publisher does. It fails the
// test on an error.
func (h *Harness) Publish(queue, messageType string, v any, opts ...runtime.PublishOption) {
	h.t.Helper()
	if err := runtime.Publish(h.t.Context(), h.broker, runtime.Queue(queue), messageType, v, opts...); err != nil {
		h.t.Fatalf("streamtest: %v", err)
	}
}

// Wait blocks until the broker is idle: every queued message handled and
// settled, every handler call returned, and with WithOutbox every message
// committed to the outbox published. Timers not yet due stay pending.
func (h *Harness) Wait() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), h.waitTimeout)
	defer cancel()
	if err := h.broker.Wait(ctx); err != nil {
		h.t.Fatal(err)
	}
}

// Advance waits for idle, moves the fake clock d forward, firing what falls
// due in order and waiting for idle after each, then waits for idle.
func (h *Harness) Advance(d time.Duration) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), h.waitTimeout)
	defer cancel()
	if err := h.broker.Advance(ctx, d); err != nil {
		h.t.Fatal(err)
	}
}

// Deliveries returns what the named subscription received, in settle order.
func (h *Harness) Deliveries(subscription string) []Delivery {
	return h.broker.Deliveries(subscription)
}

// Queue returns the messages waiting in the named queue, such as the dead
// letters of a dead-letter queue nobody consumes.
func (h *Harness) Queue(name string) []runtime.Message { return h.broker.Queue(name) }

// Rejected returns the messages a RabbitMQ subscription rejected without
// requeue.
func (h *Harness) Rejected(subscription string) []runtime.Message {
	return h.broker.Rejected(subscription)
}

// Pending returns how many timers wait on the fake clock: ZeroMQ retry
// copies waiting out their delay, RabbitMQ copies in wait queues.
func (h *Harness) Pending() int { return h.clock.Pending() }

// cleanup waits for idle (unless the test already failed), stops the App,
// and fails the test on a Run error or a handler call still running. It
// does not wait for an outbox (WithOutbox): the test may have closed its
// database already, and what it committed last and did not Wait for is
// not part of what it checked.
func (h *Harness) cleanup() {
	if h.run == nil {
		return
	}
	if !h.t.Failed() {
		ctx, cancel := context.WithTimeout(context.Background(), h.waitTimeout)
		err := h.broker.waitIdle(ctx)
		cancel()
		if err != nil {
			h.t.Errorf("streamtest: at the end of the test: %v", err)
		}
	}
	if err := h.Stop(); err != nil {
		h.t.Errorf("streamtest: the app's run ended with an error: %v", err)
	}
}
