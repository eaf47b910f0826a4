package runtime_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// subsBroker is a runtime.Broker that keeps the subscriptions it is
// started with.
type subsBroker struct {
	kind runtime.BrokerKind
	mu   sync.Mutex
	subs []runtime.Subscription
}

func (b *subsBroker) Kind() runtime.BrokerKind { return b.kind }

func (b *subsBroker) Start(_ context.Context, _ runtime.Env, subs []*runtime.Subscription) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range subs {
		b.subs = append(b.subs, *s)
	}
	return nil
}

func (b *subsBroker) Shutdown(context.Context) error { return nil }

func (b *subsBroker) started(name string) (runtime.Subscription, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.subs {
		if s.Name == name {
			return s, true
		}
	}
	return runtime.Subscription{}, false
}

// runToReady runs app until it is ready, then stops it, and returns Run's
// error.
func runToReady(t *testing.T, app *runtime.App) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := run(ctx, app)
	select {
	case <-app.Ready():
	case err := <-done:
		cancel()
		return err
	}
	cancel()
	return result(t, done)
}

// Tune sets a subscription's prefetch and concurrency in place of its
// annotations' values; what it leaves out keeps the annotation's value, a
// later Tune wins, other subscriptions and the Subscription Mount was
// given are left as they are.
func TestTuneSetsPrefetchAndConcurrency(t *testing.T) {
	b := &subsBroker{kind: runtime.RabbitMQ}
	app := runtime.NewApp("billing",
		runtime.Tune("jobs", runtime.Prefetch(200), runtime.Concurrency(4)),
		runtime.Tune("jobs", runtime.Concurrency(8)),
		runtime.Tune("invoices", runtime.Concurrency(2)),
	)
	jobs := sub("jobs")
	jobs.Prefetch, jobs.Concurrency = 10, 1
	invoices := sub("invoices")
	invoices.Prefetch = 30
	other := sub("other")
	other.Prefetch, other.Concurrency = 5, 5
	app.Mount(b, jobs, invoices, other)
	if err := runToReady(t, app); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		name                  string
		prefetch, concurrency int
	}{{"jobs", 200, 8}, {"invoices", 30, 2}, {"other", 5, 5}} {
		s, ok := b.started(want.name)
		if !ok || s.Prefetch != want.prefetch || s.Concurrency != want.concurrency {
			t.Errorf("%s started with prefetch %d, concurrency %d (found %v); want %d, %d", want.name, s.Prefetch, s.Concurrency, ok, want.prefetch, want.concurrency)
		}
	}
	if jobs.Prefetch != 10 || jobs.Concurrency != 1 {
		t.Errorf("the mounted Subscription was changed: prefetch %d, concurrency %d", jobs.Prefetch, jobs.Concurrency)
	}
}

// Run refuses a Tune that names no mounted subscription, and values that
// break the rules annotation values follow, before any broker starts.
func TestTuneRefusesWhatCannotRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind runtime.BrokerKind
		opts []runtime.Option
		want []string
	}{
		{"an unknown subscription", runtime.RabbitMQ, []runtime.Option{runtime.Tune("jbos", runtime.Prefetch(200)), runtime.Tune("jbos", runtime.Concurrency(2))},
			[]string{`runtime: Tune("jbos") names no subscription that is mounted (mounted: "invoices", "jobs")`}},
		{"a prefetch of 0", runtime.RabbitMQ, []runtime.Option{runtime.Tune("jobs", runtime.Prefetch(0))},
			[]string{`runtime: Tune("jobs"): prefetch is 0: it must be 1 or more`}},
		{"a negative concurrency", runtime.ZeroMQ, []runtime.Option{runtime.Tune("jobs", runtime.Concurrency(-2))},
			[]string{`runtime: Tune("jobs"): concurrency is -2: it must be 1 or more`}},
		{"a prefetch beyond basic.qos", runtime.RabbitMQ, []runtime.Option{runtime.Tune("jobs", runtime.Prefetch(70000))},
			[]string{`prefetch is 70000: RabbitMQ takes at most 65535`, `(with the values of runtime.Tune("jobs"))`}},
		{"a concurrency raising the prefetch beyond it", runtime.RabbitMQ, []runtime.Option{runtime.Tune("jobs", runtime.Concurrency(70000))},
			[]string{`concurrency is 70000, which raises the prefetch to 70000`, `(with the values of runtime.Tune("jobs"))`}},
		{"a zero Tuning", runtime.RabbitMQ, []runtime.Option{runtime.Tune("jobs", runtime.Tuning{})},
			[]string{`runtime: Tune("jobs") is given a zero Tuning: use runtime.Prefetch or runtime.Concurrency`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &subsBroker{kind: tc.kind}
			app := runtime.NewApp("billing", tc.opts...)
			app.Mount(b, sub("jobs"), sub("invoices"))
			err := runToReady(t, app)
			if err == nil {
				t.Fatal("Run succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Run: %v\nwant it to say %q", err, w)
				}
			}
			if strings.Count(err.Error(), "Tune(") != 1 {
				t.Errorf("Run: %v\nwant the Tune named once", err)
			}
			if len(b.subs) != 0 {
				t.Error("the broker was started")
			}
		})
	}
}

// mountJobs mounts "jobs" as a generated Mount does: refused when svc is
// nil.
func mountJobs(app *runtime.App, b runtime.Broker, svc *subsBroker) {
	if !app.Receiver("svc", svc, "Service.Work") {
		return
	}
	app.Mount(b, sub("jobs"))
}

// A Mount refused (a nil service, a nil broker, a nil subscription) is
// reported as such, with where it was called, whatever the App's Tune
// says: not as a Tune that names no subscription that is mounted, which
// would send the reader after a typo that is not there.
func TestARefusedMountIsReportedWhateverTuneSays(t *testing.T) {
	tune := runtime.Tune("jobs", runtime.Prefetch(5))
	b := &subsBroker{kind: runtime.RabbitMQ}
	for _, tc := range []struct {
		name  string
		mount func(*runtime.App) int // the line of the refused call
		want  string
	}{
		{"a nil service", func(app *runtime.App) int {
			_, _, line, _ := goruntime.Caller(0)
			mountJobs(app, b, nil)
			return line + 1
		}, "runtime: Mount (at runtime/tune_test.go:%d) was given a nil *runtime_test.subsBroker as svc, whose method Service.Work handles messages: pass a *runtime_test.subsBroker that is not nil"},
		{"a nil broker", func(app *runtime.App) int {
			_, _, line, _ := goruntime.Caller(0)
			app.Mount(nil, sub("jobs"))
			return line + 1
		}, `runtime: subscription "jobs" is mounted on a nil broker (at runtime/tune_test.go:%d)`},
		{"a nil subscription", func(app *runtime.App) int {
			_, _, line, _ := goruntime.Caller(0)
			app.Mount(b, sub("invoices"), nil)
			return line + 1
		}, "runtime: App.Mount (at runtime/tune_test.go:%d) was given a nil *runtime.Subscription: pass subscriptions that are not nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := runtime.NewApp("billing", tune)
			want := fmt.Sprintf(tc.want, tc.mount(app))
			err := runToReady(t, app)
			if err == nil || err.Error() != want {
				t.Errorf("Run = %v\nwant %s", err, want)
			}
		})
	}
	if len(b.subs) != 0 {
		t.Error("the broker was started")
	}
}

// On the harness, a tuned concurrency is how many handler calls run at
// once.
func TestTunedConcurrencyRunsThatManyCalls(t *testing.T) {
	for _, kind := range []runtime.BrokerKind{runtime.RabbitMQ, runtime.ZeroMQ} {
		t.Run(string(kind), func(t *testing.T) {
			h := streamtest.New(t, kind, streamtest.WithQuietLogs(), streamtest.WithAppOptions(runtime.Tune("jobs", runtime.Concurrency(3))))
			var mu sync.Mutex
			running, most := 0, 0
			gate := make(chan struct{})
			s := &runtime.Subscription{Name: "jobs", Concurrency: 1, Handlers: []runtime.Handler{
				runtime.Handle("Job", runtime.Policy{}, func(ctx context.Context, _ *job, _ runtime.Metadata) runtime.Outcome {
					mu.Lock()
					running++
					most = max(most, running)
					mu.Unlock()
					<-gate
					mu.Lock()
					running--
					mu.Unlock()
					return runtime.Ack()
				}),
			}}
			h.App().Mount(h.Broker(), s)
			h.Start()
			for range 6 {
				h.Publish("jobs", "Job", job{})
			}
			testkit.Eventually(t, "three calls to run at once", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return running == 3
			})
			close(gate)
			h.Wait()
			if mu.Lock(); most != 3 {
				t.Errorf("at most %d calls ran at once, want 3", most)
			}
			mu.Unlock()
			if n := len(h.Deliveries("jobs")); n != 6 {
				t.Errorf("%d deliveries, want 6", n)
			}
		})
	}
}
