package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/observe"
)

// The relay's defaults, which OpenOptions change.
const (
	// DefaultBatchSize is how many messages a relay takes from the table
	// at a time.
	DefaultBatchSize = 1000
	// DefaultPollInterval is how often a relay looks for messages when
	// nothing woke it: on PostgreSQL a commit wakes it at once (LISTEN),
	// and polling finds what another relay left; on SQLite polling is how
	// it learns of new messages.
	DefaultPollInterval = time.Second
	// DefaultRetryBackoff is how long a route waits after its first
	// failed publish; each failure in a row doubles it, up to
	// DefaultMaxRetryBackoff.
	DefaultRetryBackoff    = time.Second
	DefaultMaxRetryBackoff = time.Minute
)

// relayConfig is what OpenOptions set of the relays; its zero fields
// take the defaults.
type relayConfig struct {
	batch               int
	poll                time.Duration
	backoff, maxBackoff time.Duration
	statsEvery          time.Duration
	maxRoutes           int
	drainTimeout        time.Duration
	// dbBackoff is the first wait after the database failed; it doubles
	// up to dbMaxBackoff.
	dbBackoff, dbMaxBackoff time.Duration
}

// withDefaults returns c with every zero field given its default.
func (c relayConfig) withDefaults() relayConfig {
	if c.batch <= 0 {
		c.batch = DefaultBatchSize
	}
	if c.poll <= 0 {
		c.poll = DefaultPollInterval
	}
	if c.backoff <= 0 {
		c.backoff = DefaultRetryBackoff
	}
	if c.maxBackoff < c.backoff {
		c.maxBackoff = max(DefaultMaxRetryBackoff, c.backoff)
	}
	if c.statsEvery <= 0 {
		// A count of the table: every five polls, within 1 to 5 seconds.
		c.statsEvery = min(max(5*c.poll, time.Second), 5*time.Second)
	}
	if c.maxRoutes <= 0 {
		c.maxRoutes = 64
	}
	if c.drainTimeout <= 0 {
		c.drainTimeout = time.Minute
	}
	if c.dbBackoff <= 0 {
		c.dbBackoff = 100 * time.Millisecond
	}
	if c.dbMaxBackoff <= 0 {
		c.dbMaxBackoff = 5 * time.Second
	}
	return c
}

// WithBatchSize sets how many messages a relay takes from the table at a
// time (DefaultBatchSize): it publishes them, waits for the broker's
// confirms and removes the confirmed ones, then takes the next.
func WithBatchSize(n int) OpenOption { return func(o *Outbox) { o.relayCfg.batch = n } }

// WithPollInterval sets how often a relay looks for messages when nothing
// woke it (DefaultPollInterval).
func WithPollInterval(d time.Duration) OpenOption { return func(o *Outbox) { o.relayCfg.poll = d } }

// WithRetryBackoff sets how long a route waits after a failed publish
// before its relay tries again, first and at most (DefaultRetryBackoff,
// DefaultMaxRetryBackoff): each failure in a row doubles the wait.
func WithRetryBackoff(first, most time.Duration) OpenOption {
	return func(o *Outbox) { o.relayCfg.backoff, o.relayCfg.maxBackoff = first, most }
}

// asyncPublisher is a Publisher with the PublishAsync method (see
// runtime.Publisher): many messages await their confirmation at once.
type asyncPublisher interface {
	PublishAsync(ctx context.Context, queue string, msg runtime.Message, done func(error))
}

// Relay publishes the messages committed to an outbox through a
// runtime.Publisher, the broker, and removes each once the broker
// confirmed it. Make one with Outbox.Relay; an App runs one with
// Outbox.Option.
//
// What it guarantees:
//
//   - At least once: a message is removed only after the broker confirmed
//     it (Publish returned nil, or PublishAsync's done got nil). A relay
//     killed, a broker or database restarted between the publish and the
//     removal means the message is published again.
//   - Order per route (a queue, or an exchange and routing key): messages
//     to one route are published in commit order, one relay at a time.
//     On PostgreSQL several relays share the routes: a relay owns a route
//     while it holds the lock of its oldest row (FOR UPDATE SKIP LOCKED),
//     in a transaction in which it publishes the route's next messages
//     and removes those confirmed; a route another relay owns is skipped.
//     On SQLite run one relay per database.
//   - A failed publish (the broker is down, the queue does not exist, the
//     broker refused the message) stops its route at that message: the
//     messages before it that were confirmed are removed, it and the ones
//     after it stay, and the route waits (WithRetryBackoff, logged, shown
//     in Report) before it is tried again, its oldest message alone until
//     that one is confirmed. Other routes go on. Nothing is ever dropped.
//
// What it does not: a message is published more than once when a
// confirm is lost; and when the broker refuses a message (a nack, a
// return) but accepts one sent after it on the same route before the
// relay learnt of the refusal, that later one arrives first (publishes
// are pipelined: PublishAsync when the publisher has it).
type Relay struct {
	o     *Outbox
	pub   runtime.Publisher
	async asyncPublisher // pub's PublishAsync, or nil
	cfg   relayConfig

	log     atomic.Pointer[slog.Logger]
	running atomic.Bool
	wake    chan struct{}

	// passMu is held for a pass; on SQLite, the Outbox's instead.
	passMu sync.Mutex
	routes map[routeKey]*routeState // failing routes; under the pass lock

	reportMu      sync.Mutex
	stats         stats
	waitingRoutes []waitingRoute // the routes that wait, for Report
}

// waitingRoute is a route that waits after a failed publish, as Report
// tells it.
type waitingRoute struct {
	key routeKey
	routeState
}

// routeKey names a route: an exchange ("" for the default exchange) and
// a queue or routing key.
type routeKey struct{ exchange, route string }

func (k routeKey) String() string { return describeRoute(k.exchange, k.route) }

// routeState is a route whose last publish failed.
type routeState struct {
	failures  int       // in a row
	retryAt   time.Time // not tried before then, but by Flush
	err       error     // the last failure
	id        int64     // the row it failed on
	messageID string
}

// stats is what the relay last measured of the table.
type stats struct {
	at      time.Time // when, on this machine's clock; zero: never
	backlog int64
	oldest  time.Duration // the oldest message's age then
}

// Relay returns a relay that publishes the outbox's committed messages
// through p, a broker (runtime/rabbitmq, runtime/zeromq, or the harness
// of runtime/streamtest). It uses p's PublishAsync when p has it, so that
// many messages await their confirm at once. Run it with Run, or in an App
// with Option.
func (o *Outbox) Relay(p runtime.Publisher) *Relay {
	r := &Relay{
		o:      o,
		pub:    p,
		cfg:    o.relayCfg.withDefaults(),
		wake:   make(chan struct{}, 1),
		routes: map[routeKey]*routeState{},
	}
	r.async, _ = p.(asyncPublisher)
	r.log.Store(o.log)
	return r
}

// relayOption runs a relay in the App, publishing through broker.
func (o *Outbox) relayOption(broker runtime.Publisher) runtime.Option {
	return runtime.WithTask(o.Relay(broker).Task())
}

// Task returns the relay as a task of an App (runtime.WithTask), named
// "outbox": the App runs it once its brokers have started and stops it
// before they stop, so that the messages in hand are confirmed and
// removed. It logs with the App's logger unless the Outbox was given one
// (WithLogger). Its report has the gauges observe.GaugeOutboxBacklog and
// observe.GaugeOutboxOldestAge, and a warning per route that waits after
// a failed publish.
func (r *Relay) Task() runtime.Task {
	return runtime.Task{
		Name: "outbox",
		Run: func(ctx context.Context, env runtime.Env) error {
			if r.o.log.Handler() == slog.DiscardHandler && env.Logger != nil {
				r.log.Store(env.Logger)
			}
			return r.Run(ctx)
		},
		Report: r.Report,
	}
}

// logger is the relay's logger.
func (r *Relay) logger() *slog.Logger { return r.log.Load() }

// Wake makes a running relay look for messages now instead of at its next
// poll.
func (r *Relay) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run publishes committed messages until ctx ends, then finishes the
// messages in hand (their confirms, their removal) and returns nil. A
// database or broker that fails is logged and tried again, never
// returned: Run returns an error only when the relay runs already.
func (r *Relay) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("outbox: Relay.Run called while the relay runs: make one relay per Run")
	}
	defer r.running.Store(false)
	var listening sync.WaitGroup
	lctx, stopListening := context.WithCancel(ctx)
	defer func() {
		stopListening()
		listening.Wait()
	}()
	if r.o.dialect == PostgreSQL {
		listening.Go(func() { r.listen(lctx) })
	}
	log := r.logger()
	log.Info("outbox: relay running", "database", string(r.o.dialect), "poll", r.cfg.poll, "batch", r.cfg.batch)
	dbWait := time.Duration(0)
	var lastStats time.Time
	for ctx.Err() == nil {
		if time.Since(lastStats) >= r.cfg.statsEvery {
			lastStats = time.Now()
			r.refreshStats(ctx)
		}
		res, err := r.pass(ctx, false)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			dbWait = min(max(2*dbWait, r.cfg.dbBackoff), r.cfg.dbMaxBackoff)
			log.Warn("outbox: the relay cannot read or update the outbox table; trying again", "err", err, "retry_in", dbWait)
			r.sleep(ctx, dbWait, false)
			continue
		}
		dbWait = 0
		if res.more {
			continue
		}
		r.sleep(ctx, r.idleWait(), true)
	}
	log.Info("outbox: relay stopped")
	return nil
}

// idleWait is how long the relay sleeps when it found nothing more to do:
// until its next poll, or the first retry of a route that waits, whichever
// comes first.
func (r *Relay) idleWait() time.Duration {
	wait := r.cfg.poll
	lock := r.passLock()
	lock.Lock()
	defer lock.Unlock()
	now := time.Now()
	for _, st := range r.routes {
		if d := st.retryAt.Sub(now); d < wait {
			wait = max(d, 0)
		}
	}
	return wait
}

// sleep waits d, or until ctx ends, or, when wakeable, until Wake.
func (r *Relay) sleep(ctx context.Context, d time.Duration, wakeable bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	var wake <-chan struct{}
	if wakeable {
		wake = r.wake
	}
	select {
	case <-t.C:
	case <-wake:
	case <-ctx.Done():
	}
}

// passLock is the lock a pass holds: on SQLite the Outbox's, so that the
// relays of one Outbox in a process take turns; on PostgreSQL the relay's
// own (relays share the work through the database's row locks).
func (r *Relay) passLock() *sync.Mutex {
	if r.o.dialect == SQLite {
		return &r.o.sqliteRelay
	}
	return &r.passMu
}

// Flush publishes the messages committed now, and returns how many it
// published: it takes batches until none is left that it may take
// (on PostgreSQL, routes another relay owns are left to it), trying also
// the routes that wait after a failure. It stops at the first message
// that cannot be published, with its error. Tests call it (the harness of
// runtime/streamtest does, as it waits); a relay that Runs meanwhile takes
// turns with it.
func (r *Relay) Flush(ctx context.Context) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("outbox: flush: %w", err)
		}
		res, err := r.pass(ctx, true)
		total += res.published
		if err != nil {
			return total, err
		}
		if res.failed != nil {
			return total, res.failed
		}
		if res.taken == 0 || (!res.more && res.published == 0) {
			return total, nil
		}
	}
}

// Report says how the relay is doing, for the App's health report and
// metrics (Task): the backlog and the age of the oldest message it last
// measured (every few seconds while it runs), and a warning per route
// that waits after a failed publish.
func (r *Relay) Report() runtime.TaskReport {
	r.reportMu.Lock()
	defer r.reportMu.Unlock()
	rep := runtime.TaskReport{}
	const most = 10
	for i, w := range r.waitingRoutes {
		if i == most {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("and %d more routes wait after a failed publish", len(r.waitingRoutes)-most))
			break
		}
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("outbox: %s: message %s (row %d) not published, %d failures in a row, next try in %v: %v",
			w.key, w.messageID, w.id, w.failures, max(time.Until(w.retryAt), 0).Round(time.Millisecond), w.err))
	}
	if !r.stats.at.IsZero() {
		age := time.Duration(0)
		if r.stats.backlog > 0 {
			age = r.stats.oldest + time.Since(r.stats.at)
		}
		rep.Gauges = []observe.Gauge{
			{Name: observe.GaugeOutboxBacklog, Help: "Messages an outbox holds: committed, not yet confirmed by the broker.", Value: float64(r.stats.backlog)},
			{Name: observe.GaugeOutboxOldestAge, Help: "How long the oldest message an outbox holds has waited, in seconds.", Value: age.Seconds()},
		}
	}
	return rep
}

// refreshStats measures the table for Report; a failure leaves the last
// figures.
func (r *Relay) refreshStats(ctx context.Context) {
	st, err := r.o.Status(ctx)
	if err != nil {
		r.logger().Debug("outbox: cannot measure the backlog", "err", err)
		return
	}
	r.reportMu.Lock()
	defer r.reportMu.Unlock()
	r.stats = stats{at: time.Now(), backlog: st.Backlog, oldest: st.OldestAge}
}

// noteRoutes records, after a pass, the routes that wait, for Report. The
// pass lock is held.
func (r *Relay) noteRoutes() {
	keys := slices.SortedFunc(maps.Keys(r.routes), func(a, b routeKey) int {
		return cmp.Or(cmp.Compare(a.exchange, b.exchange), cmp.Compare(a.route, b.route))
	})
	waiting := make([]waitingRoute, len(keys))
	for i, k := range keys {
		waiting[i] = waitingRoute{key: k, routeState: *r.routes[k]}
	}
	r.reportMu.Lock()
	r.waitingRoutes = waiting
	r.reportMu.Unlock()
}
