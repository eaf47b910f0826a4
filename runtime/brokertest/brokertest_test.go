package brokertest

import (
	"context"
	"fmt"
	"io"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// recordingTB runs a case and records its failures instead of failing the
// test, so the suite itself can be tested against broken transports.
type recordingTB struct {
	testing.TB
	name string

	mu       sync.Mutex
	failures []string
	cleanups []func()
}

func (r *recordingTB) Name() string        { return r.TB.Name() + "/" + r.name }
func (r *recordingTB) Helper()             {}
func (r *recordingTB) Output() io.Writer   { return io.Discard }
func (r *recordingTB) Logf(string, ...any) {}
func (r *recordingTB) Log(...any)          {}
func (r *recordingTB) Fail()               { r.record("failed") }
func (r *recordingTB) FailNow()            { r.record("failed"); goruntime.Goexit() }
func (r *recordingTB) Error(args ...any)   { r.record(fmt.Sprint(args...)) }
func (r *recordingTB) Errorf(format string, args ...any) {
	r.record(fmt.Sprintf(format, args...))
}
func (r *recordingTB) Fatal(args ...any) { r.record(fmt.Sprint(args...)); goruntime.Goexit() }
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.record(fmt.Sprintf(format, args...))
	goruntime.Goexit()
}

func (r *recordingTB) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failures) > 0
}

func (r *recordingTB) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *recordingTB) record(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, msg)
}

// runCase runs c against tr and returns its failures.
func runCase(t *testing.T, c testCase, tr Transport) []string {
	r := &recordingTB{TB: t, name: c.name}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(r, tr)
	}()
	<-done
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.failures)
}

// naiveBroker runs every message through a Consumer whose transport loses
// every copy: nothing is retried or parked. With cancelOnStop its handlers'
// contexts derive from Start's context, which ends when the App stops.
type naiveBroker struct {
	cancelOnStop bool
	// early are messages put in a queue before Start, run once it is.
	early []runtime.Message

	mu        sync.Mutex
	consumers map[string]*adapter.Consumer
	ctx       context.Context
	cancel    context.CancelFunc
	inflight  sync.WaitGroup
}

func (b *naiveBroker) Kind() runtime.BrokerKind { return runtime.RabbitMQ }

func (b *naiveBroker) Start(ctx context.Context, env runtime.Env, subs []*runtime.Subscription) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.consumers = map[string]*adapter.Consumer{}
	for _, s := range subs {
		b.consumers[s.Name] = adapter.NewConsumer(s, env, adapter.Rules{Kind: runtime.RabbitMQ}, losingTransport{})
	}
	if b.cancelOnStop {
		b.ctx, b.cancel = context.WithCancel(ctx)
	} else {
		b.ctx, b.cancel = context.WithCancel(context.Background())
	}
	for _, m := range b.early {
		for _, c := range b.consumers {
			b.inflight.Go(func() {
				c.Handle(b.ctx, &adapter.Delivery{MessageID: m.ID, Type: m.Type, ContentType: m.ContentType, Headers: m.Headers, Body: m.Body})
			})
		}
	}
	return nil
}

func (b *naiveBroker) Shutdown(context.Context) error {
	b.inflight.Wait()
	b.cancel()
	return nil
}

func (b *naiveBroker) Publish(_ context.Context, queue string, m runtime.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.consumers[queue]
	if c == nil {
		return fmt.Errorf("naive: no consumer for %q", queue)
	}
	b.inflight.Go(func() {
		c.Handle(b.ctx, &adapter.Delivery{MessageID: m.ID, Type: m.Type, ContentType: m.ContentType, Headers: m.Headers, Body: m.Body})
	})
	return nil
}

// losingTransport sends copies nowhere and settles nothing.
type losingTransport struct{}

func (losingTransport) Send(_ context.Context, _ *adapter.Delivery, _ *adapter.Copy, done func(error)) {
	done(nil)
}
func (losingTransport) Ack(context.Context, *adapter.Delivery) error     { return nil }
func (losingTransport) Reject(context.Context, *adapter.Delivery) error  { return nil }
func (losingTransport) Requeue(context.Context, *adapter.Delivery) error { return nil }
func (losingTransport) Release(context.Context, *adapter.Delivery) error { return nil }

func naiveTransport(cancelOnStop bool) Transport {
	return Transport{
		Kind:       runtime.RabbitMQ,
		RetryDelay: 10 * time.Millisecond,
		Timeout:    time.Second,
		New: func(testing.TB, []string) Instance {
			return Instance{Broker: &naiveBroker{cancelOnStop: cancelOnStop}}
		},
	}
}

// The suite must fail a transport that loses every copy, in exactly the
// cases that need one, and pass it in the others.
func TestSuiteFailsATransportThatLosesCopies(t *testing.T) {
	wantFail := []string{
		"FailureIsRetriedWithTheRetryCount",
		"ExhaustedMessageIsParkedOnTheDeadLetterQueue",
		"UndecodableBodyIsParkedWithoutReachingTheHandler",
		"DecodePanicIsParkedAsPoison",
		"DeadLetterSkipsTheRemainingAttempts",
		"DropForgetsTheMessageWithAWarning",
		"PanicIsRecoveredAndRetried",
		"MultiLineReasonIsParkedAsTheBrokerCarriesIt",
		"CountAboveTheCapIsTheLastAttempt",
		"UnreadableCountIsPoison",
		"MiddlewareWrapsEveryCallAndMayChangeTheOutcome",
		"MiddlewarePanicIsRecoveredAndRetried",
		"HandlerTimeoutIsAFailure",
		"ObserverFollowsDeliveriesAndItsHeadersTravelOnCopies",
		"EachCodecRoundTripsOnOneQueue",
		"CorruptBodyOfEachCodecIsParkedWithItsReason",
		"HandlerOfEveryTypeTakesTheOthersWithRetriesAndDeadLetters",
		"RequestIsAnsweredAndAParkedOneToldWhere",
	}
	tr := naiveTransport(false).withDefaults()
	for _, c := range cases {
		failures := runCase(t, c, tr)
		switch {
		case slices.Contains(wantFail, c.name) && len(failures) == 0:
			t.Errorf("%s passed a transport that loses every copy", c.name)
		case !slices.Contains(wantFail, c.name) && len(failures) > 0:
			t.Errorf("%s failed where the naive transport does what it checks:\n%s", c.name, strings.Join(failures, "\n"))
		}
	}
}

// A transport that hands messages back as new ones, not as a worker that
// died leaves them, fails the case of messages that came back: they run
// among the others, uncounted.
func TestSuiteFailsATransportThatForgetsRedeliveries(t *testing.T) {
	tr := naiveTransport(false)
	tr.Redeliver = func(t testing.TB, inst Instance, queue string, msgs []runtime.Message) {
		b := inst.Broker.(*naiveBroker)
		b.mu.Lock()
		b.early = append(b.early, msgs...)
		b.mu.Unlock()
	}
	failures := runCase(t, rabbitCases[0], tr.withDefaults())
	if len(failures) == 0 {
		t.Fatal("the case passed a transport that forgets redeliveries")
	}
	if got := strings.Join(failures, "\n"); !strings.Contains(got, "want \"1\": set aside with one crash counted") {
		t.Errorf("failures do not say why: %v", failures)
	}
}

// A transport whose handlers' contexts end when the App starts to stop
// fails the graceful shutdown case.
func TestSuiteFailsATransportThatCancelsHandlersAtStop(t *testing.T) {
	c := caseNamed(t, "GracefulShutdownLetsAnInFlightHandlerFinish")
	failures := runCase(t, c, naiveTransport(true).withDefaults())
	if len(failures) == 0 {
		t.Fatal("the graceful shutdown case passed a transport that cancels handlers in flight")
	}
	// The cancelled handler returns at once, so Run returns while it should
	// still be waiting; either symptom names the handler.
	if got := strings.Join(failures, "\n"); !strings.Contains(got, "must not cancel a handler in flight") && !strings.Contains(got, "returned while a handler was still running") {
		t.Errorf("failures do not say why: %v", failures)
	}
}

func caseNamed(t *testing.T, name string) testCase {
	t.Helper()
	for _, c := range cases {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no case %s", name)
	return testCase{}
}

func TestRunRefusesAnIncompleteTransport(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   Transport
		want string
	}{
		{"no constructor", Transport{Kind: runtime.ZeroMQ}, "Transport.New is nil"},
		{"no kind", Transport{New: func(testing.TB, []string) Instance { return Instance{} }}, "Transport.Kind"},
		{"rabbitmq without redeliveries", Transport{Kind: runtime.RabbitMQ, New: func(testing.TB, []string) Instance { return Instance{} }}, "Transport.Redeliver is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recordingTB{TB: t, name: tc.name}
			done := make(chan struct{})
			go func() {
				defer close(done)
				// Run takes a *testing.T; its checks are the first lines.
				checkTransport(r, tc.tr)
			}()
			<-done
			if got := strings.Join(r.failures, "\n"); !strings.Contains(got, tc.want) {
				t.Errorf("failures %q, want one mentioning %q", got, tc.want)
			}
		})
	}
}

func TestUniqueNamesDiffer(t *testing.T) {
	a, b := uniqueName(t), uniqueName(t)
	if a == b {
		t.Fatalf("two names are both %q", a)
	}
	if !strings.HasPrefix(a, "brokertest.testuniquenamesdiffer.") {
		t.Errorf("name %q does not start with the prefix and the test's name", a)
	}
}

func TestTransportDefaults(t *testing.T) {
	tr := Transport{}.withDefaults()
	if tr.RetryDelay != 100*time.Millisecond || tr.Timeout != 30*time.Second {
		t.Errorf("defaults: retry delay %v, timeout %v", tr.RetryDelay, tr.Timeout)
	}
	tr = Transport{RetryDelay: time.Second, Timeout: time.Minute}.withDefaults()
	if tr.RetryDelay != time.Second || tr.Timeout != time.Minute {
		t.Errorf("set values were changed: %v, %v", tr.RetryDelay, tr.Timeout)
	}
}

// A transport whose New returns nothing usable fails every case at once,
// saying why.
func TestSuiteRefusesABadInstance(t *testing.T) {
	for _, tc := range []struct {
		name string
		inst Instance
		want string
	}{
		{"no broker", Instance{}, "Transport.New returned no Broker"},
		{"another kind", Instance{Broker: &naiveBroker{}}, "returned a rabbitmq broker for a zeromq transport"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := Transport{Kind: runtime.ZeroMQ, New: func(testing.TB, []string) Instance { return tc.inst }}.withDefaults()
			got := strings.Join(runCase(t, cases[0], tr), "\n")
			if !strings.Contains(got, tc.want) {
				t.Errorf("failures %q, want %q", got, tc.want)
			}
		})
	}
}
