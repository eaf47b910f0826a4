package zeromq_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// TestDialingWorkerRetriesIntoAQueueItBinds: a worker whose PULL dials a
// ventilator cannot send copies back; it names a queue it binds itself
// (out_retry=work.retry) and mounts the same handler there.
func TestDialingWorkerRetriesIntoAQueueItBinds(t *testing.T) {
	testkit.NoLeaks(t)
	ventEP := freeEndpoint(t)
	vent := zeromq.New(zeromq.Queue("work", zeromq.Ventilator(ventEP)))
	defer shutdown(t, vent)

	rec := newRecorder()
	handle := func(policy runtime.Policy) runtime.Handler {
		return jobHandler(rec, policy, func(_ *Job, md runtime.Metadata) error {
			if md.Attempt < 3 {
				return errors.New("not yet")
			}
			return nil
		})
	}
	app := runtime.NewApp("worker")
	worker := zeromq.New(
		zeromq.Queue("work", zeromq.Dial(ventEP)),
		zeromq.Queue("work.retry", zeromq.Bind(freeEndpoint(t))),
	)
	app.Mount(worker,
		&runtime.Subscription{Name: "work", Handlers: []runtime.Handler{handle(runtime.Policy{MaxAttempts: 3, OutRetry: "work.retry"})}},
		&runtime.Subscription{Name: "work.retry", Handlers: []runtime.Handler{handle(runtime.Policy{MaxAttempts: 3, OutRetry: "work.retry"})}},
	)
	streamtest.RunApp(t, app)
	publishJob(t, vent, "work", Job{ID: 5}, runtime.WithMessageID("w-5"))

	rec.waitFor(t, "work.retry", 2)
	got := rec.All()
	want := []struct {
		sub     string
		attempt int
	}{{"work", 1}, {"work.retry", 2}, {"work.retry", 3}}
	if len(got) != len(want) {
		t.Fatalf("deliveries = %+v", got)
	}
	for i, w := range want {
		if got[i].Sub != w.sub || got[i].MD.Attempt != w.attempt || got[i].MD.MessageID != "w-5" {
			t.Fatalf("delivery %d = %s attempt %d, want %s attempt %d", i+1, got[i].Sub, got[i].MD.Attempt, w.sub, w.attempt)
		}
	}
	testkit.Eventually(t, "the third delivery acked", func() bool {
		for _, s := range app.Stats() {
			if s.Subscription == "work.retry" && s.Acked == 1 {
				return true
			}
		}
		return false
	})
}

// TestStartupErrors: mounts that cannot work are refused when the app
// starts, with an error naming the subscription.
func TestStartupErrors(t *testing.T) {
	testkit.NoLeaks(t)
	fail := func(*Job, runtime.Metadata) error { return errors.New("x") }
	cases := []struct {
		name   string
		queues []zeromq.Option
		sub    *runtime.Subscription
		want   []string
	}{
		{
			name:   "a dialing mount with out_retry=self (its own name)",
			queues: []zeromq.Option{zeromq.Queue("work", zeromq.Dial("tcp://127.0.0.1:1"))},
			sub: &runtime.Subscription{Name: "work", Handlers: []runtime.Handler{
				jobHandler(newRecorder(), runtime.Policy{MaxAttempts: 3, OutRetry: "work"}, fail)}},
			want: []string{`subscription "work"`, "its retry copies cannot go back into it (out_retry=self)", "dials a ventilator"},
		},
		{
			name:   "a retry destination without an endpoint",
			queues: []zeromq.Option{zeromq.Queue("jobs", zeromq.Bind("tcp://127.0.0.1:0"))},
			sub: &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
				jobHandler(newRecorder(), runtime.Policy{MaxAttempts: 3, OutRetry: "jobs.later"}, fail)}},
			want: []string{`subscription "jobs"`, "out_retry=jobs.later has no endpoint"},
		},
		{
			name:   "a dead-letter queue without an endpoint",
			queues: []zeromq.Option{zeromq.Queue("jobs", zeromq.Bind("tcp://127.0.0.1:0"))},
			sub: &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
				jobHandler(newRecorder(), runtime.Policy{DeadLetter: "jobs.dead"}, fail)}},
			want: []string{`subscription "jobs"`, "dead_letter=jobs.dead has no endpoint"},
		},
		{
			name: "a dead-letter queue read by dialing workers",
			queues: []zeromq.Option{
				zeromq.Queue("jobs", zeromq.Bind("tcp://127.0.0.1:0")),
				zeromq.Queue("jobs.dead", zeromq.Dial("tcp://127.0.0.1:1")),
			},
			sub: &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
				jobHandler(newRecorder(), runtime.Policy{DeadLetter: "jobs.dead"}, fail)}},
			want: []string{`subscription "jobs"`, "dead_letter=jobs.dead is declared with zeromq.Dial"},
		},
		{
			name:   "a subscription without an endpoint",
			queues: nil,
			sub:    &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{jobHandler(newRecorder(), runtime.Policy{}, nil)}},
			want:   []string{`subscription "jobs" has no endpoint`},
		},
		{
			name:   "a subscription on a ventilator",
			queues: []zeromq.Option{zeromq.Queue("jobs", zeromq.Ventilator("tcp://127.0.0.1:0"))},
			sub:    &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{jobHandler(newRecorder(), runtime.Policy{}, nil)}},
			want:   []string{`subscription "jobs"`, "zeromq.Ventilator"},
		},
		{
			name:   "a negative outbox size",
			queues: []zeromq.Option{zeromq.Queue("jobs", zeromq.Bind("tcp://127.0.0.1:0"), zeromq.OutboxSize(-1))},
			sub:    &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{jobHandler(newRecorder(), runtime.Policy{}, nil)}},
			want:   []string{`queue "jobs"`, "OutboxSize is -1"},
		},
		{
			name:   "a negative connection limit",
			queues: []zeromq.Option{zeromq.Queue("jobs", zeromq.Bind("tcp://127.0.0.1:0"), zeromq.MaxConnections(-1))},
			sub:    &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{jobHandler(newRecorder(), runtime.Policy{}, nil)}},
			want:   []string{`queue "jobs"`, "MaxConnections is -1"},
		},
		{
			name:   "an endpoint that does not parse",
			queues: []zeromq.Option{zeromq.Queue("jobs", zeromq.Bind("udp://127.0.0.1:5"))},
			sub:    &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{jobHandler(newRecorder(), runtime.Policy{}, nil)}},
			want:   []string{`queue "jobs"`, `transport "udp" is not supported`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			app := runtime.NewApp("startup")
			app.Mount(zeromq.New(c.queues...), c.sub)
			err := app.Run(context.Background())
			if err == nil {
				t.Fatal("Run started; want a startup error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestBindConflictIsAStartupError: a second service binding the same
// endpoint fails to start, naming the subscription.
func TestBindConflictIsAStartupError(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	first := runtime.NewApp("first")
	first.Mount(zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep))),
		&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{jobHandler(newRecorder(), runtime.Policy{}, nil)}})
	streamtest.RunApp(t, first)

	second := runtime.NewApp("second")
	second.Mount(zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)), zeromq.Queue("jobs.dead", zeromq.Bind(freeEndpoint(t)))),
		&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{jobHandler(newRecorder(), runtime.Policy{DeadLetter: "jobs.dead"}, nil)}})
	err := second.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), `subscription "jobs"`) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("err = %v, want a bind error naming the subscription", err)
	}
}
