package zeromq_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// TestRetryAfterWaitsOnTheClockAndCapsDeliveries: a job that always fails
// with RetryAfter(30s), max_attempts 5, out_retry self. Each copy waits 30
// seconds on the clock, carries the body and headers as they arrived with
// the count one more, and the fifth delivery is dropped, not retried.
func TestRetryAfterWaitsOnTheClockAndCapsDeliveries(t *testing.T) {
	testkit.NoLeaks(t)
	const backoff = 30 * time.Second
	ep := freeEndpoint(t)
	clock := newClock()
	logs := streamtest.NewLogRecorder(nil)
	rec := newRecorder()
	app := runtime.NewApp("retries", runtime.WithClock(clock), runtime.WithLogger(logs.Logger()))
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)))
	policy := runtime.Policy{MaxAttempts: 5, OutRetry: "jobs"}
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		jobHandler(rec, policy, func(*Job, runtime.Metadata) error {
			return runtime.RetryAfter(backoff, errors.New("the job failed"))
		}),
	}})
	streamtest.RunApp(t, app)
	publishJob(t, zq, "jobs", Job{ID: 7}, runtime.WithMessageID("job-7"), runtime.WithHeader("x-tenant", "acme"))

	first := rec.waitFor(t, "jobs", 1)[0]
	firstEnv := first.MD.Raw.(*zeromq.Envelope)
	for n := 2; n <= 5; n++ {
		testkit.Eventually(t, "a retry copy waiting on the clock", func() bool { return clock.Pending() == 1 })
		if got := clock.PendingDelays()[0]; got != backoff {
			t.Fatalf("copy waits %v, want %v", got, backoff)
		}
		if got := len(rec.Of("jobs")); got != n-1 {
			t.Fatalf("%d deliveries before the delay passed, want %d", got, n-1)
		}
		clock.Advance(backoff)
		got := rec.waitFor(t, "jobs", n)[n-1]
		if got.MD.Attempt != n || got.MD.MaxAttempts != 5 {
			t.Fatalf("delivery %d: attempt %d of %d", n, got.MD.Attempt, got.MD.MaxAttempts)
		}
		// The copy is the message as it arrived, the count one more.
		env := got.MD.Raw.(*zeromq.Envelope)
		want := append([]zeromq.Header(nil), firstEnv.Headers...)
		want = append(want, zeromq.Header{Name: runtime.RetryCountHeader, Value: fmt.Sprint(n - 1)})
		if !reflect.DeepEqual(env.Headers, want) || string(env.Body) != string(firstEnv.Body) || env.Subscription != "jobs" {
			t.Fatalf("copy %d:\n got %+v\nwant headers %v and body %q", n, env, want, firstEnv.Body)
		}
	}
	last := rec.Of("jobs")[4]
	if last.MD.Headers[runtime.RetryCountHeader] != "4" {
		t.Fatalf("last copy count = %q, want 4", last.MD.Headers[runtime.RetryCountHeader])
	}

	testkit.Eventually(t, "the fifth failure dropped", func() bool { return len(logs.Containing("message dropped")) == 1 })
	drop := logs.Containing("message dropped")[0]
	if drop.Attrs["subscription"] != "jobs" || drop.Attrs["message_id"] != "job-7" ||
		!strings.Contains(drop.Attrs["reason"], "failed on attempt 5 of 5") {
		t.Fatalf("drop line = %s", drop)
	}
	if p := clock.PendingDelays(); len(p) != 0 {
		t.Fatalf("after the fifth delivery %d copies wait, want none", len(p))
	}
	if n := len(rec.Of("jobs")); n != 5 {
		t.Fatalf("%d deliveries, want exactly 5", n)
	}
	// A copy is settled (and counted) once written, and its reader may take
	// it first; its retry is logged when decided, before that.
	testkit.Eventually(t, "the fourth copy settled", func() bool { return app.Stats()[0].Retried == 4 })
	stats := app.Stats()[0]
	if stats.Delivered != 5 || stats.Retried != 4 || stats.Dropped != 1 {
		t.Fatalf("metrics = %+v, want 5 delivered, 4 retried, 1 dropped", stats)
	}
	if n := len(logs.Containing("message will be retried")); n != 4 {
		t.Fatalf("%d retry lines, want 4", n)
	}
}

// TestImmediateRetryNeedsNoClock: a plain failure with max_attempts 3 and
// out_retry self comes back at once, without the clock moving.
func TestImmediateRetryNeedsNoClock(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	clock := newClock()
	rec := newRecorder()
	app := runtime.NewApp("retries", runtime.WithClock(clock))
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)))
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		jobHandler(rec, runtime.Policy{MaxAttempts: 3, OutRetry: "jobs"}, func(_ *Job, md runtime.Metadata) error {
			if md.Attempt < 3 {
				return errors.New("not yet")
			}
			return nil
		}),
	}})
	streamtest.RunApp(t, app)
	publishJob(t, zq, "jobs", Job{ID: 1})
	got := rec.waitFor(t, "jobs", 3)
	for i, g := range got {
		if g.MD.Attempt != i+1 {
			t.Fatalf("delivery %d has attempt %d", i+1, g.MD.Attempt)
		}
	}
	testkit.Eventually(t, "the third delivery acked", func() bool { return app.Stats()[0].Acked == 1 })
	if clock.Pending() != 0 {
		t.Fatalf("timers pending: %v", clock.PendingDelays())
	}
}

// TestPlainRetryWithoutCapBringsNothingBack: with no max_attempts and no
// destination, a failure is final: one delivery, no copy, and a warning
// that says so.
func TestPlainRetryWithoutCapBringsNothingBack(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	clock := newClock()
	logs := streamtest.NewLogRecorder(nil)
	rec := newRecorder()
	app := runtime.NewApp("retries", runtime.WithClock(clock), runtime.WithLogger(logs.Logger()))
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)))
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		jobHandler(rec, runtime.Policy{}, func(j *Job, _ runtime.Metadata) error {
			if j.ID == 1 {
				return runtime.RetryAfter(time.Second, errors.New("please retry"))
			}
			return nil
		}),
	}})
	streamtest.RunApp(t, app)
	publishJob(t, zq, "jobs", Job{ID: 1}, runtime.WithMessageID("plain"))
	publishJob(t, zq, "jobs", Job{ID: 2})

	rec.waitFor(t, "jobs", 2)
	testkit.Eventually(t, "the drop warning", func() bool { return len(logs.Containing("message dropped")) == 1 })
	drop := logs.Containing("message dropped")[0]
	if drop.Level.String() != "WARN" || drop.Attrs["subscription"] != "jobs" || drop.Attrs["message_id"] != "plain" ||
		!strings.Contains(drop.Attrs["reason"], "nothing brings it back") {
		t.Fatalf("drop line = %s", drop)
	}
	clock.Advance(time.Hour)
	if p := clock.PendingDelays(); len(p) != 0 {
		t.Fatalf("copies waiting: %v", p)
	}
	if got := rec.Of("jobs"); len(got) != 2 {
		t.Fatalf("deliveries = %+v, want the failing job once and the next one", got)
	}
	if s := app.Stats()[0]; s.Retried != 0 || s.Dropped != 1 {
		t.Fatalf("metrics = %+v", s)
	}
}

// TestRetryCountHeaderName: with the Rust framework's header name, counts
// are read from it and copies carry it; the Go name is not used.
func TestRetryCountHeaderName(t *testing.T) {
	testkit.NoLeaks(t)
	const rust = "x-ruststream-retry-count"
	ep := freeEndpoint(t)
	rec := newRecorder()
	app := runtime.NewApp("retries")
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)), zeromq.WithRetryCountHeader(rust))
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		jobHandler(rec, runtime.Policy{MaxAttempts: 5, OutRetry: "jobs"}, func(*Job, runtime.Metadata) error {
			return errors.New("fail")
		}),
	}})
	streamtest.RunApp(t, app)
	// A message that already went through two retries in a Rust service.
	push := rawPush(t, ep)
	send(t, push, "jobs", "type: job\nmessage-id: r\n"+rust+": 2", `{"id":1}`)

	got := rec.waitFor(t, "jobs", 3)
	for i, g := range got {
		if g.MD.Attempt != 3+i {
			t.Fatalf("delivery %d: attempt %d, want %d", i+1, g.MD.Attempt, 3+i)
		}
		if _, ok := g.MD.Headers[runtime.RetryCountHeader]; ok {
			t.Fatalf("copy carries %s: %v", runtime.RetryCountHeader, g.MD.Headers)
		}
	}
	if c := got[2].MD.Headers[rust]; c != "4" {
		t.Fatalf("last copy %s = %q, want 4", rust, c)
	}
}

// TestHugeRetryCountUsesUpTheAttempts: a retry count above
// retrycount.Max reads as that many, as on every broker: the message
// reaches its handler once, has no attempt left, and is parked.
func TestHugeRetryCountUsesUpTheAttempts(t *testing.T) {
	testkit.NoLeaks(t)
	rec := newRecorder()
	app := runtime.NewApp("huge-count")
	zq := zeromq.New(
		zeromq.Queue("jobs", zeromq.Bind(freeEndpoint(t))),
		zeromq.Queue("jobs.dead", zeromq.Bind(freeEndpoint(t))),
	)
	app.Mount(zq,
		&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
			jobHandler(rec, runtime.Policy{MaxAttempts: 3, OutRetry: "jobs", DeadLetter: "jobs.dead"},
				func(*Job, runtime.Metadata) error { return errors.New("boom") }),
		}},
		&runtime.Subscription{Name: "jobs.dead", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, nil)}},
	)
	streamtest.RunApp(t, app)
	publishJob(t, zq, "jobs", Job{ID: 1}, runtime.WithMessageID("huge"), runtime.WithHeader(runtime.RetryCountHeader, "9223372036854775807"))

	dead := rec.waitFor(t, "jobs.dead", 1)
	want := 3 // the last attempt, never one beyond max_attempts
	if got := rec.Of("jobs"); len(got) != 1 || got[0].MD.Attempt != want {
		t.Fatalf("deliveries on jobs %+v, want one, attempt %d", got, want)
	}
	if h := dead[0].MD.Headers; h[runtime.HeaderDeadLetterAttempts] != fmt.Sprint(want) || !strings.Contains(h[runtime.HeaderDeadLetterReason], "boom") {
		t.Fatalf("dead letter headers %v, want %d attempts and the handler's error", h, want)
	}
}
