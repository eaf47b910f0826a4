package rabbitmq_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// env is a test's broker: its own connection and queue names it deletes
// afterwards.
type env struct {
	t    *testing.T
	url  string
	conn *amqp.Connection
	ctx  context.Context
}

func newEnv(t *testing.T) *env {
	t.Helper()
	url := brokerurl.RabbitMQ()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &env{t: t, url: url, conn: testkit.DialRabbitMQ(t, url), ctx: ctx}
}

// name returns a queue name unique to the test, deleted after it.
func (e *env) name(label string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	n := "streamgen-test.dlq." + label + "." + hex.EncodeToString(b)
	e.t.Cleanup(func() {
		for _, q := range []string{n, n + ".retry", n + ".dl", n + runtime.SuspectQueueSuffix} {
			e.channel(func(ch *amqp.Channel) error { _, err := ch.QueueDelete(q, false, false, false); return err })
		}
	})
	return n
}

func (e *env) channel(f func(*amqp.Channel) error) error {
	ch, err := e.conn.Channel()
	if err != nil {
		return err
	}
	defer func() { _ = ch.Close() }()
	return f(ch)
}

// declare declares a durable queue.
func (e *env) declare(q string, args amqp.Table) {
	e.t.Helper()
	if err := e.channel(func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(q, true, false, false, false, args)
		return err
	}); err != nil {
		e.t.Fatalf("declare %s: %v", q, err)
	}
}

// publish sends msgs to q with confirms.
func (e *env) publish(q string, msgs ...amqp.Publishing) {
	e.t.Helper()
	if err := e.channel(func(ch *amqp.Channel) error {
		if err := ch.Confirm(false); err != nil {
			return err
		}
		for _, m := range msgs {
			dc, err := ch.PublishWithDeferredConfirm("", q, true, false, m)
			if err != nil {
				return err
			}
			if ok, err := dc.WaitContext(e.ctx); !ok || err != nil {
				return fmt.Errorf("not confirmed: %v", err)
			}
		}
		return nil
	}); err != nil {
		e.t.Fatalf("publish to %s: %v", q, err)
	}
}

// drain takes every message of q (auto-ack) and returns them in order.
func (e *env) drain(q string) []amqp.Delivery {
	e.t.Helper()
	var out []amqp.Delivery
	if err := e.channel(func(ch *amqp.Channel) error {
		for {
			d, ok, err := ch.Get(q, true)
			if err != nil || !ok {
				return err
			}
			out = append(out, d)
		}
	}); err != nil {
		e.t.Fatalf("drain %s: %v", q, err)
	}
	return out
}

func (e *env) ready(q string) int {
	e.t.Helper()
	n := -1
	if err := e.channel(func(ch *amqp.Channel) error {
		info, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
		n = info.Messages
		return err
	}); err != nil {
		e.t.Fatalf("inspect %s: %v", q, err)
	}
	return n
}

// quorum4 reports whether the broker is RabbitMQ 4 or later.
func (e *env) major() int {
	v, _ := e.conn.Properties["version"].(string)
	var major int
	_, _ = fmt.Sscanf(v, "%d.", &major)
	return major
}

// quorumArgs are the arguments streamgen declares a quorum dead-letter
// queue with on the test broker.
func (e *env) quorumArgs() amqp.Table {
	if e.major() >= 4 {
		return amqp.Table{"x-queue-type": "quorum", "x-delivery-limit": int64(-1)}
	}
	return amqp.Table{"x-queue-type": "quorum"}
}

func (e *env) queue(name string) *rabbitmq.DeadLetterQueue {
	return rabbitmq.NewDeadLetterQueue(e.conn, name)
}

// ids returns the message ids of letters, in order.
func ids(ds []amqp.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.MessageId
	}
	return out
}

// service is a real subscription on a runtime App and a rabbitmq Broker.
type service struct {
	broker *rabbitmq.Broker
	mu     sync.Mutex
	seen   map[string][]int // message id: the attempts it was handled as
	heads  map[string]map[string]string
	fail   bool
}

// card is the message type of the test service.
type card struct {
	Order int    `json:"order"`
	Note  string `json:"note"`
}

// startService runs a subscription on queue whose Card handler fails
// every message while fail is set ("order N: card declined"), so that it
// is retried at once and parked into dlq after maxAttempts attempts, and
// acks it otherwise. Its Refund handler fails at once. A body that is not
// a card is parked as poison.
func (e *env) startService(queue, dlq string, qt runtime.QueueType, maxAttempts int) *service {
	e.t.Helper()
	s := &service{broker: rabbitmq.New(e.url, rabbitmq.WithConnectionName("streamgen-test dlq")), seen: map[string][]int{}, heads: map[string]map[string]string{}, fail: true}
	handler := func(ctx context.Context, c *card, md runtime.Metadata) runtime.Outcome {
		s.mu.Lock()
		s.seen[md.MessageID] = append(s.seen[md.MessageID], md.Attempt)
		s.heads[md.MessageID] = md.Headers
		fail := s.fail
		s.mu.Unlock()
		if fail {
			return runtime.OutcomeOf(fmt.Errorf("order %d: card declined", c.Order))
		}
		return runtime.Ack()
	}
	other := func(ctx context.Context, c *card, md runtime.Metadata) runtime.Outcome {
		return runtime.OutcomeOf(fmt.Errorf("refund of %s failed: gateway timeout", md.MessageID))
	}
	sub := &runtime.Subscription{
		Name:        queue,
		Broker:      runtime.RabbitMQ,
		QueueType:   qt,
		RetryDelays: []time.Duration{20 * time.Millisecond},
		Handlers: []runtime.Handler{
			runtime.Handle("Card", runtime.Policy{MaxAttempts: maxAttempts, DeadLetter: dlq}, handler),
			runtime.Handle("Refund", runtime.Policy{MaxAttempts: 1, DeadLetter: dlq}, other),
		},
	}
	logger := slog.New(slog.NewTextHandler(e.t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	app := runtime.NewApp("streamgen-test-dlq", runtime.WithLogger(logger))
	app.Mount(s.broker, sub)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	select {
	case <-app.Ready():
	case err := <-done:
		e.t.Fatalf("the App did not start: %v", err)
	case <-time.After(testkit.Patience):
		e.t.Fatal("the App did not start in time")
	}
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			e.t.Errorf("the App stopped with %v", err)
		}
	})
	return s
}

// send publishes a message of type typ with id to queue through the
// service's Broker.
func (s *service) send(t *testing.T, queue, typ, id string, v any, opts ...runtime.PublishOption) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	if err := runtime.Publish(ctx, s.broker, runtime.Queue(queue), typ, v, append(opts, runtime.WithMessageID(id))...); err != nil {
		t.Fatalf("publish %s: %v", id, err)
	}
}

func (s *service) attempts(id string) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.seen[id]...)
}

func (s *service) headers(id string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heads[id]
}

func (s *service) setFail(fail bool) {
	s.mu.Lock()
	s.fail = fail
	s.mu.Unlock()
}

// pika runs a python3 program with pika against the test broker.
func pika(t *testing.T, url, program string) string {
	t.Helper()
	cmd := exec.Command("/usr/bin/python3", "-c", "import pika, sys\nurl = sys.argv[1]\n"+program, url)
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pika: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}
