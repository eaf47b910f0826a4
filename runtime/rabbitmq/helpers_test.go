package rabbitmq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// The broker the integration tests use; STREAMGEN_RABBITMQ_URL overrides it.
const defaultBrokerURL = "amqp://guest:guest@127.0.0.1:5672/"

// patience bounds every wait of a test for something to happen.
const patience = 30 * time.Second

func brokerURL() string {
	if u := os.Getenv("STREAMGEN_RABBITMQ_URL"); u != "" {
		return u
	}
	return defaultBrokerURL
}

// admin is a test's own connection to the broker, to set up queues, send
// odd messages and look at what the Broker under test did.
type admin struct {
	t    testing.TB
	conn *amqp.Connection
}

// newAdmin connects to the test broker, or fails the test saying how to
// start one.
func newAdmin(t testing.TB) *admin {
	t.Helper()
	conn, err := amqp.Dial(brokerURL())
	if err != nil {
		t.Fatalf("RabbitMQ is not reachable at %s: start it with `rabbitmq-server -detached` (install: apt-get install -y rabbitmq-server): %v",
			RedactURL(brokerURL()), err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &admin{t: t, conn: conn}
}

// version is the version of the test broker, as the Broker reads it.
func (a *admin) version() serverVersion { return versionOf(a.conn.Properties) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// queue returns a queue name unique to this test, and deletes it after
// the test together with the queues named by it plus each suffix (the
// default: its wait queue and dead-letter queue) and its suspect queue,
// which a Broker declares for every subscription with ack=manual.
func (a *admin) queue(label string, suffixes ...string) string {
	a.t.Helper()
	name := "streamgen-test." + label + "." + randomHex(4)
	if len(suffixes) == 0 {
		suffixes = []string{".retry", ".dl"}
	}
	suffixes = append(suffixes, runtime.SuspectQueueSuffix)
	names := []string{name}
	for _, s := range suffixes {
		names = append(names, name+s)
	}
	a.t.Cleanup(func() {
		for _, n := range names {
			a.delete(n)
		}
	})
	return name
}

// channel runs f on a fresh channel: a channel error in one step does not
// spoil the next.
func (a *admin) channel(f func(ch *amqp.Channel) error) error {
	ch, err := a.conn.Channel()
	if err != nil {
		return err
	}
	defer func() { _ = ch.Close() }()
	return f(ch)
}

func (a *admin) delete(queue string) {
	_ = a.channel(func(ch *amqp.Channel) error {
		_, err := ch.QueueDelete(queue, false, false, false)
		return err
	})
}

// declare declares a durable queue with args.
func (a *admin) declare(queue string, args amqp.Table) {
	a.t.Helper()
	if err := a.channel(func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(queue, true, false, false, false, args)
		return err
	}); err != nil {
		a.t.Fatalf("declare %s: %v", queue, err)
	}
}

// publish sends msgs to queue with publisher confirms and fails the test
// unless the broker confirms them all.
func (a *admin) publish(queue string, msgs ...amqp.Publishing) {
	a.t.Helper()
	err := a.channel(func(ch *amqp.Channel) error {
		if err := ch.Confirm(false); err != nil {
			return err
		}
		confirms := make([]*amqp.DeferredConfirmation, 0, len(msgs))
		for _, m := range msgs {
			dc, err := ch.PublishWithDeferredConfirm("", queue, true, false, m)
			if err != nil {
				return err
			}
			confirms = append(confirms, dc)
		}
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		for _, dc := range confirms {
			if ok, err := dc.WaitContext(ctx); err != nil || !ok {
				return fmt.Errorf("not confirmed (ack %v, %v)", ok, err)
			}
		}
		return nil
	})
	if err != nil {
		a.t.Fatalf("publish to %s: %v", queue, err)
	}
}

// tryPublish sends msg to queue and reports whether the broker confirmed
// it with an ack.
func (a *admin) tryPublish(queue string, msg amqp.Publishing) bool {
	a.t.Helper()
	acked := false
	if err := a.channel(func(ch *amqp.Channel) error {
		if err := ch.Confirm(false); err != nil {
			return err
		}
		dc, err := ch.PublishWithDeferredConfirm("", queue, false, false, msg)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		acked, err = dc.WaitContext(ctx)
		return err
	}); err != nil {
		a.t.Fatalf("publish to %s: %v", queue, err)
	}
	if acked {
		a.purge(queue)
	}
	return acked
}

// purge empties queue.
func (a *admin) purge(queue string) {
	a.t.Helper()
	if err := a.channel(func(ch *amqp.Channel) error {
		_, err := ch.QueuePurge(queue, false)
		return err
	}); err != nil {
		a.t.Fatalf("purge %s: %v", queue, err)
	}
}

// Publish makes the admin a runtime.Publisher, so tests can send with
// runtime.Publish without going through the Broker under test.
func (a *admin) Publish(_ context.Context, queue string, m runtime.Message) error {
	a.publish(queue, publishingOf(m, time.Now()))
	return nil
}

// handBack takes the first n messages of queue on a channel of its own
// and closes it without settling them, as a worker that dies does: the
// broker requeues them, marked redelivered (and counted, on a quorum
// queue). It returns once they are back.
func (a *admin) handBack(queue string, n int) {
	a.t.Helper()
	ch, err := a.conn.Channel()
	if err != nil {
		a.t.Fatal(err)
	}
	if err := ch.Qos(n, 0, false); err != nil {
		a.t.Fatal(err)
	}
	deliveries, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	for i := range n {
		select {
		case <-deliveries:
		case <-time.After(patience):
			a.t.Fatalf("took %d messages of %s in %v, want %d", i, queue, patience, n)
		}
	}
	if err := ch.Close(); err != nil {
		a.t.Fatal(err)
	}
	testkit.Eventually(a.t, "the messages to be back in "+queue, func() bool { return a.ready(queue) >= n })
}

// get takes one message from queue (basic.get, auto-ack).
func (a *admin) get(queue string) (amqp.Delivery, bool) {
	a.t.Helper()
	var d amqp.Delivery
	var ok bool
	if err := a.channel(func(ch *amqp.Channel) error {
		var err error
		d, ok, err = ch.Get(queue, true)
		return err
	}); err != nil {
		a.t.Fatalf("get from %s: %v", queue, err)
	}
	return d, ok
}

// ready returns how many messages wait in queue, ready for delivery.
func (a *admin) ready(queue string) int {
	a.t.Helper()
	var n int
	if err := a.channel(func(ch *amqp.Channel) error {
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		n = q.Messages
		return err
	}); err != nil {
		a.t.Fatalf("inspect %s: %v", queue, err)
	}
	return n
}

// exists reports whether queue exists.
func (a *admin) exists(queue string) bool {
	return a.channel(func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		return err
	}) == nil
}

// unacked returns the messages of queue delivered and not yet
// acknowledged, as the broker counts them.
func (a *admin) unacked(queue string) int {
	a.t.Helper()
	out := rabbitmqctl(a.t, "list_queues", "-q", "--no-table-headers", "name", "messages_unacknowledged")
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == queue {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				a.t.Fatalf("list_queues: %q", line)
			}
			return n
		}
	}
	a.t.Fatalf("list_queues does not list %s:\n%s", queue, out)
	return 0
}

// rabbitmqctl runs the tests' rabbitmqctl (testkit.RabbitmqctlCommand:
// STREAMGEN_RABBITMQCTL, else the default local node's) and returns its
// output, failing the test when it fails.
func rabbitmqctl(t testing.TB, args ...string) string {
	t.Helper()
	return testkit.Rabbitmqctl(t, args...)
}

// setPolicy applies a policy to the queue named exactly queue and clears
// it after the test; it returns the policy's name.
func setPolicy(t testing.TB, queue, definition string) string {
	t.Helper()
	name := "streamgen-test-" + randomHex(4)
	rabbitmqctl(t, "set_policy", name, "^"+regexp.QuoteMeta(queue)+"$", definition, "--apply-to", "queues")
	t.Cleanup(func() { clearPolicy(t, name) })
	return name
}

func clearPolicy(t testing.TB, name string) {
	t.Helper()
	// Clearing twice (in the test and in its cleanup) is fine.
	_, _ = testkit.RunRabbitmqctl(context.Background(), "clear_policy", name)
}

// eventually is testkit.Eventually under the name the tests of attempt.go,
// runner.go and message.go call it by.

// job is the message type of the tests.
type job struct {
	ID int `json:"id"`
}

// calls records the handler calls of a test.
type calls struct {
	mu  sync.Mutex
	mds []runtime.Metadata
	ids []int
}

func (c *calls) add(j *job, md runtime.Metadata) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mds = append(c.mds, md)
	c.ids = append(c.ids, j.ID)
}

func (c *calls) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mds)
}

func (c *calls) metadata() []runtime.Metadata {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]runtime.Metadata(nil), c.mds...)
}

func (c *calls) attempts() []int {
	var out []int
	for _, md := range c.metadata() {
		out = append(out, md.Attempt)
	}
	return out
}

var errFailed = errors.New("failed on purpose")

// handler returns a job handler that records each call in c and returns
// what outcome says.
func handler(typ string, p runtime.Policy, c *calls, outcome func(j *job, md runtime.Metadata) runtime.Outcome) runtime.Handler {
	return runtime.Handle(typ, p, func(_ context.Context, j *job, md runtime.Metadata) runtime.Outcome {
		c.add(j, md)
		return outcome(j, md)
	})
}

// cameBack reports a delivery of a message that came back after its
// worker died, lost its connection or handed it back: set aside on the
// suspect queue, it carries its count of crashes (a delivery of the
// subscription's own queue that the broker redelivered is set aside
// without running; on a quorum queue, one released at shutdown runs,
// redelivered).
func cameBack(md runtime.Metadata) bool {
	return md.Redelivered || md.Headers[adapter.HeaderCrashes] != ""
}

func alwaysFail(*job, runtime.Metadata) runtime.Outcome { return runtime.Retry().Because(errFailed) }
func alwaysAck(*job, runtime.Metadata) runtime.Outcome  { return runtime.Ack() }

// app is an App running a Broker under test.
type app struct {
	t      testing.TB
	app    *runtime.App
	broker *Broker
	logs   *streamtest.LogRecorder
	cancel context.CancelFunc
	done   chan struct{} // closed when Run has returned err
	err    error
}

// newTestBroker returns a Broker on the test broker with small backoffs
// and a connection name unique to the test.
func newTestBroker(opts ...Option) *Broker {
	base := []Option{WithReconnectBackoff(50*time.Millisecond, time.Second, 0.2), WithConnectionName("streamgen-test-" + randomHex(4))}
	return New(brokerURL(), append(base, opts...)...)
}

// runApp mounts subs on b in a new App, runs it until it is ready, and
// stops it in the test's cleanup, expecting a clean stop.
func runApp(t testing.TB, b *Broker, subs ...*runtime.Subscription) *app {
	t.Helper()
	a := startApp(t, b, 20*time.Second, subs...)
	a.waitReady()
	t.Cleanup(func() {
		if err := a.stop(); err != nil {
			t.Errorf("the App stopped with an error: %v", err)
		}
	})
	return a
}

// startApp runs an App with b and subs without waiting for it.
func startApp(t testing.TB, b *Broker, shutdownTimeout time.Duration, subs ...*runtime.Subscription) *app {
	t.Helper()
	logs := streamtest.NewLogRecorder(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	ra := runtime.NewApp("streamgen-test", runtime.WithLogger(logs.Logger()), runtime.WithShutdownTimeout(shutdownTimeout))
	ra.Mount(b, subs...)
	ctx, cancel := context.WithCancel(context.Background())
	a := &app{t: t, app: ra, broker: b, logs: logs, cancel: cancel, done: make(chan struct{})}
	go func() {
		a.err = ra.Run(ctx)
		close(a.done)
	}()
	t.Cleanup(func() { _ = a.stop() })
	return a
}

// waitReady waits until the App runs, failing the test if it does not.
func (a *app) waitReady() {
	a.t.Helper()
	select {
	case <-a.app.Ready():
	case <-a.done:
		a.t.Fatalf("the App did not start: %v", a.err)
	case <-time.After(patience):
		a.t.Fatal("the App did not start in time")
	}
}

// stop stops the App and returns what Run returned. It may be called more
// than once.
func (a *app) stop() error {
	a.cancel()
	select {
	case <-a.done:
		return a.err
	case <-time.After(patience + 20*time.Second):
		return errors.New("App.Run did not return")
	}
}

// stats returns the counters of subscription sub.
func (a *app) stats(sub string) runtime.SubscriptionStats {
	for _, s := range a.app.Stats() {
		if s.Subscription == sub {
			return s
		}
	}
	return runtime.SubscriptionStats{}
}

// publish sends a job of type typ with runtime.Publish, as generated
// publishers do.
func publishJob(t testing.TB, p runtime.Publisher, queue, typ string, j job, opts ...runtime.PublishOption) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := runtime.Publish(ctx, p, runtime.Queue(queue), typ, j, opts...); err != nil {
		t.Fatalf("publish: %v", err)
	}
}

// sub writes a subscription on queue with one retry delay when it retries.
func sub(queue string, retryDelay time.Duration, handlers ...runtime.Handler) *runtime.Subscription {
	s := &runtime.Subscription{Name: queue, Broker: runtime.RabbitMQ, Handlers: handlers}
	if s.Retries() && retryDelay > 0 {
		s.RetryDelays = []time.Duration{retryDelay}
	}
	return s
}
