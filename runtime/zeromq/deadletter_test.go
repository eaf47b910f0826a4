package zeromq_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// TestDeadLetterWithoutMaxAttemptsParksEveryFailure: dead_letter and no
// cap: each failure goes straight to the dead-letter queue, framed with its
// name, and a handler mounted there reads it.
func TestDeadLetterWithoutMaxAttemptsParksEveryFailure(t *testing.T) {
	testkit.NoLeaks(t)
	clock := newClock()
	rec := newRecorder()
	logs := streamtest.NewLogRecorder(nil)
	app := runtime.NewApp("dead-letters", runtime.WithClock(clock), runtime.WithLogger(logs.Logger()))
	zq := zeromq.New(
		zeromq.Queue("invoices", zeromq.Bind(freeEndpoint(t))),
		zeromq.Queue("invoices.dead", zeromq.Bind(freeEndpoint(t))),
	)
	app.Mount(zq,
		&runtime.Subscription{Name: "invoices", Handlers: []runtime.Handler{
			jobHandler(rec, runtime.Policy{DeadLetter: "invoices.dead"}, func(*Job, runtime.Metadata) error {
				return errors.New("cannot send it")
			}),
		}},
		&runtime.Subscription{Name: "invoices.dead", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, nil)}},
	)
	streamtest.RunApp(t, app)
	for i := 1; i <= 3; i++ {
		publishJob(t, zq, "invoices", Job{ID: i}, runtime.WithMessageID(fmt.Sprint("inv-", i)))
	}

	dead := rec.waitFor(t, "invoices.dead", 3)
	if n := len(rec.Of("invoices")); n != 3 {
		t.Fatalf("%d deliveries on invoices, want 3 (one each)", n)
	}
	for _, d := range dead {
		h := d.MD.Headers
		if d.MD.Attempt != 1 || h[runtime.HeaderDeadLetterSource] != "invoices" || h[runtime.HeaderDeadLetterAttempts] != "1" ||
			h[runtime.HeaderDeadLetterPoison] != "false" || h[runtime.HeaderDeadLetterReason] != "failed: cannot send it" ||
			h[runtime.HeaderDeadLetterTime] != "2030-01-02T03:04:05.000Z" {
			t.Fatalf("dead letter = %+v", d.MD)
		}
		env := d.MD.Raw.(*zeromq.Envelope)
		if env.Subscription != "invoices.dead" || d.MD.MessageType != "job" {
			t.Fatalf("dead letter framed as %q, type %q", env.Subscription, d.MD.MessageType)
		}
	}
	testkit.Eventually(t, "three park lines", func() bool { return len(logs.Containing("message parked")) == 3 })
	for _, e := range logs.Containing("message parked") {
		if e.Attrs["subscription"] != "invoices" || e.Attrs["dead_letter"] != "invoices.dead" || e.Attrs["message_id"] == "" {
			t.Fatalf("park line = %s", e)
		}
	}
}

// TestRetriesAndDeadLetterOnOneMount: max_attempts 3 with out_retry self and
// a dead-letter queue: three deliveries, then the dead letter says three
// attempts were made and starts a fresh retry count.
func TestRetriesAndDeadLetterOnOneMount(t *testing.T) {
	testkit.NoLeaks(t)
	clock := newClock()
	rec := newRecorder()
	app := runtime.NewApp("dead-letters", runtime.WithClock(clock))
	zq := zeromq.New(
		zeromq.Queue("jobs", zeromq.Bind(freeEndpoint(t))),
		zeromq.Queue("jobs.dead", zeromq.Bind(freeEndpoint(t))),
	)
	app.Mount(zq,
		&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
			jobHandler(rec, runtime.Policy{MaxAttempts: 3, OutRetry: "jobs", DeadLetter: "jobs.dead"},
				func(*Job, runtime.Metadata) error { return runtime.RetryAfter(time.Minute, errors.New("boom")) }),
		}},
		&runtime.Subscription{Name: "jobs.dead", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, nil)}},
	)
	streamtest.RunApp(t, app)
	publishJob(t, zq, "jobs", Job{ID: 9})

	for n := 2; n <= 3; n++ {
		testkit.Eventually(t, "a copy waiting", func() bool { return clock.Pending() == 1 })
		clock.Advance(time.Minute)
		rec.waitFor(t, "jobs", n)
	}
	dead := rec.waitFor(t, "jobs.dead", 1)[0]
	h := dead.MD.Headers
	if _, ok := h[runtime.RetryCountHeader]; ok || dead.MD.Attempt != 1 {
		t.Fatalf("dead letter carries the retry count: attempt %d, headers %v", dead.MD.Attempt, h)
	}
	if h[runtime.HeaderDeadLetterAttempts] != "3" ||
		h[runtime.HeaderDeadLetterReason] != "failed on attempt 3 of 3: boom" || dead.Body != "9" {
		t.Fatalf("dead letter = %+v", dead.MD)
	}
	if n := len(rec.Of("jobs")); n != 3 {
		t.Fatalf("%d deliveries, want 3", n)
	}
}

// TestDeadLetterHeaderValuesStayOnOneLine: a reason with line breaks is
// written on one line, so the header frame still parses.
func TestDeadLetterHeaderValuesStayOnOneLine(t *testing.T) {
	testkit.NoLeaks(t)
	rec := newRecorder()
	app := runtime.NewApp("dead-letters")
	zq := zeromq.New(
		zeromq.Queue("jobs", zeromq.Bind(freeEndpoint(t))),
		zeromq.Queue("jobs.dead", zeromq.Bind(freeEndpoint(t))),
	)
	app.Mount(zq,
		&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
			jobHandler(rec, runtime.Policy{DeadLetter: "jobs.dead"},
				func(*Job, runtime.Metadata) error {
					return runtime.DeadLetter(errors.New("line one\nline two\r\nthree"))
				}),
		}},
		&runtime.Subscription{Name: "jobs.dead", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, nil)}},
	)
	streamtest.RunApp(t, app)
	publishJob(t, zq, "jobs", Job{ID: 1})
	dead := rec.waitFor(t, "jobs.dead", 1)[0]
	if r := dead.MD.Headers[runtime.HeaderDeadLetterReason]; r != "dead-lettered by the handler: line one line two three" {
		t.Fatalf("reason = %q", r)
	}
}

// TestAHugeReasonStillParks: a failure whose error text is larger than a
// header frame may be still parks the message, with the reason cut short
// to runtime.MaxReasonBytes and saying so.
func TestAHugeReasonStillParks(t *testing.T) {
	testkit.NoLeaks(t)
	rec := newRecorder()
	app := runtime.NewApp("huge-reason", runtime.WithLogger(streamtest.NewLogRecorder(nil).Logger()))
	zq := zeromq.New(
		zeromq.Queue("reports", zeromq.Bind(freeEndpoint(t))),
		zeromq.Queue("reports.dead", zeromq.Bind(freeEndpoint(t))),
	)
	huge := strings.Repeat("é", 100<<10) // 200 KiB
	app.Mount(zq,
		&runtime.Subscription{Name: "reports", Handlers: []runtime.Handler{
			jobHandler(rec, runtime.Policy{DeadLetter: "reports.dead"}, func(*Job, runtime.Metadata) error {
				return runtime.DeadLetter(errors.New(huge))
			}),
		}},
		&runtime.Subscription{Name: "reports.dead", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, nil)}},
	)
	streamtest.RunApp(t, app)
	publishJob(t, zq, "reports", Job{ID: 1}, runtime.WithMessageID("r-1"))
	dead := rec.waitFor(t, "reports.dead", 1)
	reason := dead[0].MD.Headers[runtime.HeaderDeadLetterReason]
	if len(reason) > runtime.MaxReasonBytes || !utf8.ValidString(reason) || !strings.HasPrefix(reason, "dead-lettered by the handler: éé") || !strings.HasSuffix(reason, "bytes cut)") {
		t.Fatalf("reason of %d bytes: %.80q…%q", len(reason), reason, reason[max(0, len(reason)-40):])
	}
}
