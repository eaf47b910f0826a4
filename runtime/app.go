package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/internal/counters"
	"github.com/streamgen/streamgen/runtime/internal/waitqueue"
	"github.com/streamgen/streamgen/runtime/observe"
)

// The defaults of what an App, a subscription or a policy leaves unset.
const (
	// DefaultShutdownTimeout bounds a graceful stop unless
	// WithShutdownTimeout says otherwise.
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultRetryDelay is the RabbitMQ wait-queue TTL used when a
	// subscription retries and names no retry_delay.
	DefaultRetryDelay = waitqueue.DefaultDelay
	// DefaultBatchWait is how long a batch that is not full waits for
	// more messages when the subscription sets no BatchWait.
	DefaultBatchWait = 50 * time.Millisecond
)

// App runs subscriptions on brokers. Generated Mount functions register the
// subscriptions of a package; Run starts every broker, blocks until its
// context ends, then stops gracefully:
//
//	app := runtime.NewApp("billing", runtime.WithLogger(slog.Default()))
//	billing.Mount(app, zq)
//	err := app.Run(ctx)
type App struct {
	name            string
	logger          *slog.Logger
	codec           Codec
	clock           clock.Clock
	shutdownTimeout time.Duration
	metrics         *counters.Set
	ready           chan struct{}
	transactor      Transactor // begins the *sql.Tx handlers' transactions (WithTransactor); nil for none
	middleware      []Middleware
	observer        observe.Observer
	startHooks      []func(context.Context) error
	stopHooks       []stopHook
	tunes           []tune
	tasks           []*taskState

	mu     sync.Mutex
	mounts []mount
	errs   []error
	// refused is set when a Mount was refused (a nil receiver, broker or
	// subscription): a subscription it would have mounted may be missing,
	// so a Tune that names none that is mounted is not reported.
	refused bool
	started bool
	phase   appPhase
}

// stopHook is an OnStop hook, and how many OnStart hooks were given
// before it.
type stopHook struct {
	fn    func(context.Context) error
	after int
}

// appPhase is where an App is in its one run.
type appPhase uint8

const (
	phaseNew appPhase = iota
	phaseStarting
	phaseRunning
	phaseStopping
	phaseStopped
)

type mount struct {
	broker Broker
	sub    *Subscription
}

// Option configures an App.
type Option func(*App)

// WithLogger sets the logger; the default discards everything.
func WithLogger(l *slog.Logger) Option { return func(a *App) { a.logger = l } }

// WithCodec sets the codec of message bodies; the default is JSON.
func WithCodec(c Codec) Option { return func(a *App) { a.codec = c } }

// WithClock sets the clock the runtime waits with (see runtime/clock);
// tests pass a fake one.
func WithClock(c clock.Clock) Option { return func(a *App) { a.clock = c } }

// WithShutdownTimeout bounds how long a graceful stop waits for in-flight
// handlers; when it passes, their contexts are cancelled.
func WithShutdownTimeout(d time.Duration) Option { return func(a *App) { a.shutdownTimeout = d } }

// OnStart adds a hook that Run calls before any broker starts, so before
// anything is consumed, with Run's context: to open what the handlers
// need, or check that it answers. Hooks run in the order given; the first
// error stops startup: Run starts no broker and returns the error,
// wrapped. A nil hook is ignored.
func OnStart(fn func(ctx context.Context) error) Option {
	return func(a *App) {
		if fn != nil {
			a.startHooks = append(a.startHooks, fn)
		}
	}
}

// OnStop adds a hook that Run calls after every broker has stopped, so
// after the last handler returned, with a context bounded by the shutdown
// timeout: to close what the handlers used. Hooks run in the reverse of
// the order given, as deferred calls do, each even when another failed;
// their errors are joined into Run's. They run at the end of every Run
// whose start hooks all succeeded, a failed broker start or a broker
// failure included. When a start hook fails, the stop hooks given before
// it run, and those given after it do not, so that a pair written
// OnStart(open), OnStop(close) closes only what was opened. A nil hook is
// ignored.
func OnStop(fn func(ctx context.Context) error) Option {
	return func(a *App) {
		if fn != nil {
			a.stopHooks = append(a.stopHooks, stopHook{fn: fn, after: len(a.startHooks)})
		}
	}
}

// Tuning is a value Tune sets on a subscription: Prefetch or Concurrency.
type Tuning struct {
	key string // the annotation key it stands for
	n   int
	set func(*Subscription, int)
}

// Prefetch sets the subscription's Prefetch, in place of its prefetch=
// annotation: how many deliveries the worker may hold unsettled (RabbitMQ:
// basic.qos). It must be at least 1, and at most 65535 on RabbitMQ.
func Prefetch(n int) Tuning {
	return Tuning{key: "prefetch", n: n, set: func(s *Subscription, n int) { s.Prefetch = n }}
}

// Concurrency sets the subscription's Concurrency, in place of its
// concurrency= annotation: how many handler calls may run at once. It must
// be at least 1.
func Concurrency(n int) Tuning {
	return Tuning{key: "concurrency", n: n, set: func(s *Subscription, n int) { s.Concurrency = n }}
}

// tune is one Tune option.
type tune struct {
	subscription string
	settings     []Tuning
}

// Tune sets values of the subscription named subscription, so that an
// operator can change them from main, without regenerating:
//
//	app := runtime.NewApp("billing", runtime.Tune("jobs", runtime.Prefetch(200), runtime.Concurrency(8)))
//
// The annotations stay the defaults: what Tune leaves out keeps the
// annotation's value. A later Tune of the same subscription and key wins.
// The values apply wherever a subscription of that name is mounted, and
// are checked as the annotations are; Run fails when one breaks a rule,
// or when no subscription of that name is mounted (a typo is not ignored;
// when a Mount was refused, a nil service say, Run reports that instead,
// since the subscription may be one it would have mounted).
func Tune(subscription string, settings ...Tuning) Option {
	return func(a *App) {
		for _, t := range settings {
			if t.set == nil {
				a.errs = append(a.errs, fmt.Errorf("runtime: Tune(%q) is given a zero Tuning: use runtime.Prefetch or runtime.Concurrency", subscription))
			} else if t.n < 1 {
				a.errs = append(a.errs, fmt.Errorf("runtime: Tune(%q): %s is %d: it must be 1 or more", subscription, t.key, t.n))
			}
		}
		a.tunes = append(a.tunes, tune{subscription: subscription, settings: settings})
	}
}

// tuned returns s with the values Tune sets for it, a copy, and whether
// there are any; s itself is left as it is.
func (a *App) tuned(s *Subscription) (*Subscription, bool) {
	var t *Subscription
	for _, tn := range a.tunes {
		if tn.subscription != s.Name {
			continue
		}
		for _, set := range tn.settings {
			if set.set == nil || set.n < 1 {
				continue // refused by Tune
			}
			if t == nil {
				c := *s
				t = &c
			}
			set.set(t, set.n)
		}
	}
	if t == nil {
		return s, false
	}
	return t, true
}

// NewApp returns an App named name.
func NewApp(name string, opts ...Option) *App {
	d := Env{}.Complete()
	a := &App{
		name:            name,
		logger:          d.Logger,
		codec:           d.Codec,
		clock:           d.Clock,
		shutdownTimeout: DefaultShutdownTimeout,
		metrics:         d.Metrics,
		ready:           make(chan struct{}),
	}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Name returns the App's name.
func (a *App) Name() string { return a.name }

// Logger returns the App's logger (WithLogger), for what runs beside its
// brokers, such as an OnStart hook's background work.
func (a *App) Logger() *slog.Logger { return a.logger }

// Codec returns the App's codec.
func (a *App) Codec() Codec { return a.codec }

// Ready is closed once every broker has started and consumes. When Run
// fails before that (a startup error), Ready is never closed: wait for
// Run's result too.
func (a *App) Ready() <-chan struct{} { return a.ready }

// isNil reports whether b is nil or a nil pointer in an interface.
func isNil(b Broker) bool {
	if b == nil {
		return true
	}
	v := reflect.ValueOf(b)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Mount registers subscriptions on broker b. Problems (a nil broker or
// subscription, a subscription that does not fit the broker) are reported
// by Run, with where Mount was called.
func (a *App) Mount(b Broker, subs ...*Subscription) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range subs {
		switch {
		case s == nil:
			a.refused = true
			a.errs = append(a.errs, fmt.Errorf("runtime: App.Mount (at %s) was given a nil *runtime.Subscription: pass subscriptions that are not nil", callSite(0)))
		case isNil(b):
			a.refused = true
			a.errs = append(a.errs, fmt.Errorf("runtime: subscription %q is mounted on a nil broker (at %s)", s.Name, callSite(0)))
		default:
			a.mounts = append(a.mounts, mount{broker: b, sub: s})
		}
	}
}

// Receiver reports whether recv, the value a generated Mount was given in
// its parameter param for the handler methods named (Service.Place), can
// have them called. It cannot when it is nil (a nil *Service): every
// message would panic in its handler. Then Run fails with an error that
// names the parameter, the handlers and where the generated Mount was
// called, and Mount mounts nothing. Generated Mount functions call it for
// each pointer they take, before they take its methods' values.
func (a *App) Receiver(param string, recv any, handlers ...string) bool {
	if recv != nil {
		v := reflect.ValueOf(recv)
		if v.Kind() != reflect.Pointer || !v.IsNil() {
			return true
		}
	}
	t := "value"
	if recv != nil {
		t = reflect.TypeOf(recv).String()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refused = true
	a.errs = append(a.errs, fmt.Errorf("runtime: Mount (at %s) was given a nil %s as %s, whose %s %s messages: pass a %s that is not nil",
		callSite(1), t, param, plural(len(handlers), "method", "methods"), andList(handlers)+plural(len(handlers), " handles", " handle"), t))
	return false
}

// callSite returns where callSite's caller was called from (skip 0), or
// the function skip frames above it, as the folder and file name and the
// line ("billing/main.go:42"), or "an unknown place".
func callSite(skip int) string {
	_, file, line, ok := goruntime.Caller(skip + 2)
	if !ok {
		return "an unknown place"
	}
	return fmt.Sprintf("%s/%s:%d", filepath.Base(filepath.Dir(file)), filepath.Base(file), line)
}

// plural returns one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// andList joins names as "a", "a and b", "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

type brokerGroup struct {
	broker Broker
	subs   []*Subscription
}

// Run starts every broker, consumes until ctx ends, then stops gracefully:
// each broker stops consuming, lets in-flight handlers finish within the
// shutdown timeout, and closes. Tasks (WithTask) run from the moment
// every broker has started until the stop begins, and end before the
// brokers stop; an App with tasks may have no subscriptions. It returns
// nil after a graceful stop, the startup error when a broker cannot start,
// or the error a broker (or a task) failed with while running.
func (a *App) Run(ctx context.Context) error {
	groups, err := a.prepare()
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var failure error
	var failOnce sync.Once
	env := a.env()
	env.fail = func(err error) {
		failOnce.Do(func() {
			failure = err
			a.logger.Error("a broker failed; stopping", "err", err)
			cancel(err)
		})
	}
	if n, err := a.runStartHooks(runCtx); err != nil {
		stopErr := a.runStopHooks(ctx, n)
		a.setPhase(phaseStopped)
		return errors.Join(err, stopErr)
	}
	var started []Broker
	for _, g := range groups {
		if err := g.broker.Start(runCtx, env, g.subs); err != nil {
			a.setPhase(phaseStopping)
			a.shutdown(started)
			stopErr := a.runStopHooks(ctx, len(a.startHooks))
			a.setPhase(phaseStopped)
			return errors.Join(brokerError("start", g.broker.Kind(), err), stopErr)
		}
		started = append(started, g.broker)
	}
	n := 0
	for _, g := range groups {
		n += len(g.subs)
	}
	a.logger.Info("app running", "app", a.name, "subscriptions", n)
	a.setPhase(phaseRunning)
	close(a.ready)
	tasks := a.startTasks(runCtx, env)
	<-runCtx.Done()
	a.logger.Info("app stopping", "app", a.name, "timeout", a.shutdownTimeout)
	a.setPhase(phaseStopping)
	taskErr := a.stopTasks(tasks)
	err = a.shutdown(started)
	failOnce.Do(func() {}) // no failure may be recorded from now on
	stopErr := a.runStopHooks(ctx, len(a.startHooks))
	a.setPhase(phaseStopped)
	return errors.Join(failure, taskErr, err, stopErr)
}

// runStartHooks runs the OnStart hooks in order until one fails. It
// returns how many succeeded, and the error of the one that failed.
func (a *App) runStartHooks(ctx context.Context) (int, error) {
	for i, fn := range a.startHooks {
		if err := fn(ctx); err != nil {
			return i, fmt.Errorf("runtime: start hook %d of %d: %w", i+1, len(a.startHooks), err)
		}
	}
	return len(a.startHooks), nil
}

// runStopHooks runs, in reverse order, the OnStop hooks given before the
// (succeeded+1)-th OnStart hook, within the shutdown timeout, and joins
// their errors.
func (a *App) runStopHooks(parent context.Context, succeeded int) error {
	if len(a.stopHooks) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), a.shutdownTimeout)
	defer cancel()
	var errs []error
	for i := len(a.stopHooks) - 1; i >= 0; i-- {
		h := a.stopHooks[i]
		if h.after > succeeded {
			continue
		}
		if err := h.fn(ctx); err != nil {
			errs = append(errs, fmt.Errorf("runtime: stop hook %d of %d: %w", i+1, len(a.stopHooks), err))
		}
	}
	return errors.Join(errs...)
}

func (a *App) setPhase(p appPhase) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.phase = p
}

// env is what the App hands its brokers, but for Fail, which
// only Run can set.
func (a *App) env() Env {
	return Env{
		App: a.name, Logger: a.logger, Codec: a.codec, Clock: a.clock, Metrics: a.metrics,
		Middleware: a.middleware, Observer: a.observer,
	}.Complete()
}

// prepare validates the mounts and groups their consumers by broker, in
// mount order.
func (a *App) prepare() ([]brokerGroup, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started {
		return nil, errors.New("runtime: App.Run called twice")
	}
	a.started = true
	a.phase = phaseStarting
	errs := append([]error(nil), a.errs...)
	if len(a.mounts) == 0 && len(a.tasks) == 0 && len(errs) == 0 {
		return nil, errors.New("runtime: no subscriptions are mounted: call the generated Mount before Run")
	}
	var groups []brokerGroup
	index := map[Broker]int{}
	seen := map[Broker]map[string]bool{}
	mounted := map[string]bool{}
	for _, m := range a.mounts {
		mounted[m.sub.Name] = true
		sub, tuned := a.tuned(m.sub)
		if err := sub.Validate(m.broker.Kind()); err != nil {
			if tuned {
				err = fmt.Errorf("%w (with the values of runtime.Tune(%q))", err, sub.Name)
			}
			errs = append(errs, err)
			continue
		}
		sub, err := bindTransactions(sub, a.transactor)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m.sub = sub
		if seen[m.broker][m.sub.Name] {
			errs = append(errs, fmt.Errorf("runtime: subscription %q is mounted twice on the same %s broker", m.sub.Name, m.broker.Kind()))
			continue
		}
		if seen[m.broker] == nil {
			seen[m.broker] = map[string]bool{}
		}
		seen[m.broker][m.sub.Name] = true
		i, ok := index[m.broker]
		if !ok {
			i = len(groups)
			index[m.broker] = i
			groups = append(groups, brokerGroup{broker: m.broker})
		}
		groups[i].subs = append(groups[i].subs, m.sub)
	}
	unknown := map[string]bool{}
	for _, t := range a.tunes {
		if !a.refused && !mounted[t.subscription] && !unknown[t.subscription] {
			unknown[t.subscription] = true
			errs = append(errs, fmt.Errorf("runtime: Tune(%q) names no subscription that is mounted (mounted: %s)", t.subscription, mountedList(mounted)))
		}
	}
	if len(errs) > 0 {
		a.phase = phaseStopped
		return nil, errors.Join(errs...)
	}
	return groups, nil
}

// mountedList lists the names mounted, sorted and quoted.
func mountedList(mounted map[string]bool) string {
	names := slices.Sorted(maps.Keys(mounted))
	for i, n := range names {
		names[i] = strconv.Quote(n)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// shutdown stops the brokers concurrently, within the shutdown timeout.
func (a *App) shutdown(brokers []Broker) error {
	ctx, cancel := context.WithTimeout(context.Background(), a.shutdownTimeout)
	defer cancel()
	errs := make([]error, len(brokers))
	var wg sync.WaitGroup
	for i, b := range brokers {
		wg.Go(func() {
			if err := b.Shutdown(ctx); err != nil {
				errs[i] = brokerError("stop", b.Kind(), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// brokerError wraps err, returned by a broker of the given kind when it
// was asked to start or stop, naming the broker once: the adapters' errors
// already begin with their name ("rabbitmq: ...").
func brokerError(op string, kind BrokerKind, err error) error {
	if kind != "" && strings.HasPrefix(err.Error(), string(kind)+": ") {
		return fmt.Errorf("runtime: %s %w", op, err)
	}
	return fmt.Errorf("runtime: %s %s: %w", op, kind, err)
}
