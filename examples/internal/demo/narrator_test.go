package demo

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// newTestNarrator returns a narrator writing to out, with the time of a
// fake clock that starts at streamtest.DefaultStart. It hides the line a
// ZeroMQ subscription logs once, that acks do nothing there, as the demos
// do.
func newTestNarrator() (n *Narrator, out *testkit.SyncBuffer, clock *streamtest.Clock) {
	clock = streamtest.NewClock(time.Time{})
	out = &testkit.SyncBuffer{}
	return NewNarrator(out, clock.Now).Hiding("ZeroMQ cannot acknowledge"), out, clock
}

// wire is the transport of the Consumers these tests run: it takes each
// copy at once, or fails it with fail when that is set, and settles every
// original.
type wire struct{ fail error }

func (w wire) Send(_ context.Context, _ *adapter.Delivery, _ *adapter.Copy, done func(error)) {
	done(w.fail)
}
func (wire) Ack(context.Context, *adapter.Delivery) error     { return nil }
func (wire) Reject(context.Context, *adapter.Delivery) error  { return nil }
func (wire) Requeue(context.Context, *adapter.Delivery) error { return nil }
func (wire) Release(context.Context, *adapter.Delivery) error { return nil }

// deliver hands d, a JSON message, to a real adapter.Consumer of sub on a
// broker of kind, logging to n, so that the test sees the runtime's own
// records of what it decided. The Consumer's clock never moves: a retry
// copy that waits in memory (ZeroMQ) stays there.
func deliver(t *testing.T, n slog.Handler, kind runtime.BrokerKind, sub *runtime.Subscription, tr wire, d *adapter.Delivery) {
	t.Helper()
	env := runtime.Env{Logger: slog.New(n), Clock: streamtest.NewClock(time.Time{})}
	c := adapter.NewConsumer(sub, env, adapter.Rules{Kind: kind}, tr)
	if d.Body == nil {
		d.Body = []byte(`{}`)
	}
	c.Handle(t.Context(), d)
}

// onAttempt is a delivery of message id of type Job, on the given attempt.
func onAttempt(id string, attempt int) *adapter.Delivery {
	return &adapter.Delivery{MessageID: id, Type: "Job", Headers: map[string]string{runtime.RetryCountHeader: strconv.Itoa(attempt - 1)}}
}

// jobs is the subscription name whose handler of message type Job, under
// policy, returns for each message id the outcome outcomes gives it, and
// acknowledges the others.
func jobs(name string, policy runtime.Policy, outcomes map[string]runtime.Outcome) *runtime.Subscription {
	type job struct{}
	return &runtime.Subscription{Name: name, Handlers: []runtime.Handler{
		runtime.Handle("Job", policy, func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome { return outcomes[md.MessageID] }),
	}}
}

func TestNarratorTellsWhatTheConsumerDid(t *testing.T) {
	n, out, clock := newTestNarrator()
	retrying := jobs("jobs", runtime.Policy{MaxAttempts: 5, OutRetry: "jobs"}, map[string]runtime.Outcome{
		"job-2": runtime.OutcomeOf(runtime.RetryAfter(30*time.Second, errors.New("the gateway timed out"))),
	})
	deliver(t, n, runtime.ZeroMQ, retrying, wire{}, onAttempt("job-2", 1))
	clock.Advance(120 * time.Second)
	declined := jobs("jobs", runtime.Policy{MaxAttempts: 5, OutRetry: "jobs"}, map[string]runtime.Outcome{
		"job-2": runtime.OutcomeOf(errors.New("the card was declined")),
	})
	deliver(t, n, runtime.ZeroMQ, declined, wire{}, onAttempt("job-2", 5))
	parking := jobs("jobs", runtime.Policy{DeadLetter: "invoices.dead"}, map[string]runtime.Outcome{
		"inv-2": runtime.OutcomeOf(errors.New("no amount")),
	})
	deliver(t, n, runtime.ZeroMQ, parking, wire{}, onAttempt("inv-2", 1))
	deliver(t, n, runtime.ZeroMQ, parking, wire{}, &adapter.Delivery{MessageID: "x-1", Type: "Refund"})
	deliver(t, n, runtime.RabbitMQ, jobs("jobs", runtime.Policy{}, nil), wire{}, &adapter.Delivery{MessageID: "x-2"})

	want := []string{
		"   +0.0s  jobs            job-2      1/5  retry: after 30s its copy went back into jobs (the gateway timed out)",
		" +120.0s  jobs            job-2      5/5  DROPPED: failed on attempt 5 of 5: the card was declined",
		" +120.0s  jobs            inv-2      1/1  PARKED on invoices.dead: failed: no amount",
		` +120.0s  jobs            x-1        1/1  PARKED on invoices.dead: no handler for message type "Refund" (this subscription handles "Job") (poison: it never reached a handler)`,
		" +120.0s  jobs            x-2        1/1  REJECTED without requeue: the message has no type, so no handler can take it",
	}
	got := out.Lines()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("narration:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestNarratorSaysWhereARetryCopyWent(t *testing.T) {
	for _, tc := range []struct {
		kind     runtime.BrokerKind
		outRetry string
		delay    time.Duration
		want     string
	}{
		{runtime.RabbitMQ, "", 0, "retry: a copy waits 500ms in orders.retry.500ms (boom)"},
		{runtime.ZeroMQ, "orders", 0, "retry: its copy went at once back into orders (boom)"},
		{runtime.ZeroMQ, "orders", 2 * time.Second, "retry: after 2s its copy went back into orders (boom)"},
		{runtime.ZeroMQ, "orders.later", time.Minute, "retry: after 1m0s its copy went to orders.later (boom)"},
	} {
		n, out, _ := newTestNarrator()
		failure := runtime.OutcomeOf(runtime.RetryAfter(tc.delay, errors.New("boom")))
		if tc.kind == runtime.RabbitMQ {
			failure = runtime.OutcomeOf(errors.New("boom"))
		}
		orders := jobs("orders", runtime.Policy{MaxAttempts: 3, OutRetry: tc.outRetry}, map[string]runtime.Outcome{"o-1": failure})
		if tc.kind == runtime.RabbitMQ {
			orders.Handlers[0].Policy.OutRetry = ""
			orders.RetryDelays = []time.Duration{500 * time.Millisecond, 10 * time.Second}
		}
		deliver(t, n, tc.kind, orders, wire{}, onAttempt("o-1", 1))
		if got := out.Lines()[0]; !strings.HasSuffix(got, "1/3  "+tc.want) {
			t.Errorf("%s, out_retry %q, delay %v: %q, want it to end with %q", tc.kind, tc.outRetry, tc.delay, got, tc.want)
		}
	}
}

func TestNarratorShowsAcksOnlyAtDebugLevel(t *testing.T) {
	n, out, _ := newTestNarrator()
	sub := jobs("jobs", runtime.Policy{}, nil)
	deliver(t, n, runtime.ZeroMQ, sub, wire{}, onAttempt("quiet", 1))
	deliver(t, n.WithLevel(slog.LevelDebug), runtime.ZeroMQ, sub, wire{}, onAttempt("loud", 1))
	got := out.Lines()
	if len(got) != 1 || !strings.Contains(got[0], "loud") || !strings.HasSuffix(got[0], "1/1  acked") {
		t.Fatalf("narration %q, want only the debug-level ack of message loud", got)
	}
	if n.Enabled(context.Background(), slog.LevelDebug) || !n.Enabled(context.Background(), slog.LevelInfo) {
		t.Error("a new Narrator should show Info and above only")
	}
}

func TestNarratorWritesOtherRecordsWithTheirAttributes(t *testing.T) {
	n, out, _ := newTestNarrator()
	log := slog.New(n).With("subscription", "jobs").WithGroup("job")
	log.Info("charged", "id", 7, slog.Group("amount", "cents", 1250), "message_id", "job-7")
	slog.New(n).Warn("zeromq: cannot reach queue", "queue", "jobs", "err", errors.New("refused"))
	slog.New(n).Error("handler panicked", "subscription", "jobs", "panic", "boom", "stack", "goroutine 1 [running]: ...")
	slog.New(n).Info("plain", "attempt", 2)
	want := []string{
		"   +0.0s  jobs                            charged (job.id=7, job.amount.cents=1250, job.message_id=job-7)",
		"   +0.0s                                  warning: zeromq: cannot reach queue (queue=jobs, err=refused)",
		"   +0.0s  jobs                            error: handler panicked (panic=boom)",
		"   +0.0s                               2  plain",
	}
	if got := out.Lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("narration:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestNarratorReportsVerdictsThatFailed(t *testing.T) {
	n, out, _ := newTestNarrator()
	sub := jobs("jobs", runtime.Policy{DeadLetter: "jobs.dead"}, map[string]runtime.Outcome{"j-1": runtime.OutcomeOf(errors.New("bad"))})
	deliver(t, n, runtime.ZeroMQ, sub, wire{fail: errors.New("peer gone")}, onAttempt("j-1", 1))
	want := `ERROR could not park the message: failed: bad: dead letter to "jobs.dead" failed: peer gone; ZeroMQ cannot take the message back, so it is lost`
	if got := out.Lines()[0]; !strings.HasSuffix(got, want) {
		t.Fatalf("%q, want it to end with %q", got, want)
	}
}

func TestNarratorWritesWholeLinesFromManyGoroutines(t *testing.T) {
	n, out, _ := newTestNarrator()
	log := slog.New(n)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			for range 50 {
				log.Info("tick", "subscription", "jobs", "worker", i)
			}
		})
	}
	wg.Wait()
	lines := out.Lines()
	if len(lines) != 1000 {
		t.Fatalf("%d lines, want 1000", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "   +0.0s  jobs") || !strings.Contains(l, "tick (worker=") {
			t.Fatalf("torn line %q", l)
		}
	}
}

func TestNarratorHidesWhatItIsToldTo(t *testing.T) {
	n, out, _ := newTestNarrator()
	log := slog.New(n.Hiding("ZeroMQ cannot", "app "))
	log.Warn("ZeroMQ cannot acknowledge a message", "subscription", "jobs")
	log.Info("app running")
	log.Info("job charged", "subscription", "jobs")
	slog.New(n).Info("app stopping")
	got := out.Lines()
	if len(got) != 2 || !strings.HasSuffix(got[0], "job charged") || !strings.HasSuffix(got[1], "app stopping") {
		t.Fatalf("narration %q, want only the job charged line from the hiding narrator", got)
	}
}

func TestColumnTitlesLineUpWithTheLines(t *testing.T) {
	n, out, _ := newTestNarrator()
	slog.New(n).Info("x", "subscription", "jobs", "message_id", "job-1", "attempt", 1, "max_attempts", 5)
	line, titles := out.Lines()[0], ColumnTitles()
	for _, col := range []struct{ title, value string }{{"subscription", "jobs"}, {"message", "job-1"}, {"what happened", "x"}} {
		if strings.Index(titles, col.title) != strings.Index(line, col.value) {
			t.Errorf("column %q starts at %d in %q but its value %q at %d in %q",
				col.title, strings.Index(titles, col.title), titles, col.value, strings.Index(line, col.value), line)
		}
	}
	if !strings.HasSuffix(titles[:strings.Index(titles, "what")], "try  ") || !strings.Contains(line, "1/5  x") {
		t.Errorf("the try column does not line up: %q / %q", titles, line)
	}
}

// messageLog logs as a handler of the examples does, with the attributes
// the runtime logs about a message.
func messageLog(n slog.Handler, level slog.Level, msg, sub, id string, attempt, maxAttempts int, attrs ...any) {
	slog.New(n).Log(context.Background(), level, msg,
		append([]any{"subscription", sub, "message_id", id, "attempt", attempt, "max_attempts", maxAttempts}, attrs...)...)
}

// ZeroMQ sends a retry copy or a dead letter before the runtime logs that
// it did, so the copy's delivery may log first. The narrator still tells
// the retry before the next attempt, and the park before the dead letter's
// delivery.
func TestNarratorTellsACopyAfterTheRecordThatSentIt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		parent func(t *testing.T, n *Narrator)
		copy   func(n *Narrator)
		want   []string
	}{
		{
			name: "retry",
			parent: func(t *testing.T, n *Narrator) {
				sub := jobs("jobs", runtime.Policy{MaxAttempts: 5, OutRetry: "jobs"}, map[string]runtime.Outcome{
					"job-2": runtime.OutcomeOf(runtime.RetryAfter(30*time.Second, errors.New("boom"))),
				})
				deliver(t, n, runtime.ZeroMQ, sub, wire{}, onAttempt("job-2", 1))
			},
			copy: func(n *Narrator) { messageLog(n, slog.LevelWarn, "charge failed", "jobs", "job-2", 2, 5) },
			want: []string{"job-2      1/5  retry: after 30s its copy went back into jobs (boom)", "job-2      2/5  warning: charge failed"},
		},
		{
			name: "dead letter",
			parent: func(t *testing.T, n *Narrator) {
				sub := jobs("invoices", runtime.Policy{DeadLetter: "invoices.dead"}, map[string]runtime.Outcome{"inv-2": runtime.OutcomeOf(errors.New("no amount"))})
				deliver(t, n, runtime.ZeroMQ, sub, wire{}, onAttempt("inv-2", 1))
			},
			copy: func(n *Narrator) { messageLog(n, slog.LevelError, "invoice parked", "invoices.dead", "inv-2", 1, 1) },
			want: []string{"inv-2      1/1  PARKED on invoices.dead: failed: no amount", "inv-2      1/1  error: invoice parked"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, out, _ := newTestNarrator()
			n = n.WithDeadLetterQueues("invoices.dead")
			copyTold := make(chan struct{})
			go func() {
				defer close(copyTold)
				tc.copy(n)
			}()
			time.Sleep(100 * time.Millisecond) // time enough for the copy's record to be written, if it were not held
			if got := out.String(); got != "" {
				t.Fatalf("the copy was told before the record that sent it: %q", got)
			}
			tc.parent(t, n)
			<-copyTold
			got := out.Lines()
			if len(got) != 2 || !strings.Contains(got[0], tc.want[0]) || !strings.Contains(got[1], tc.want[1]) {
				t.Fatalf("narration:\n%s\nwant lines containing, in order:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// A copy whose sending nobody tells (one left in a queue by an earlier
// run) is told all the same, after a short wait.
func TestNarratorTellsACopyWhoseSendingIsNotTold(t *testing.T) {
	n, out, _ := newTestNarrator()
	n.out.copyWait = 10 * time.Millisecond
	n = n.WithDeadLetterQueues("invoices.dead")
	messageLog(n, slog.LevelWarn, "charge failed", "jobs", "job-9", 3, 5)
	messageLog(n, slog.LevelError, "invoice parked", "invoices.dead", "inv-9", 1, 1)
	messageLog(n, slog.LevelInfo, "invoice sent", "invoices", "inv-8", 1, 1) // not a copy: told at once
	if got := out.Lines(); len(got) != 3 || !strings.Contains(got[0], "job-9      3/5  warning: charge failed") ||
		!strings.Contains(got[1], "inv-9      1/1  error: invoice parked") || !strings.Contains(got[2], "inv-8") {
		t.Fatalf("narration %q, want the three records in the order logged", got)
	}
}

// CaughtUp waits until every delivery the counters show settled has been
// told: the runtime counts a delivery just before it logs its settling.
func TestNarratorCatchesUpWithTheCounters(t *testing.T) {
	n, _, _ := newTestNarrator()
	jobs := newCounts("jobs")
	m := jobs.snapshot
	jobs.add(func(s *runtime.SubscriptionStats) { s.Acked++ }) // an ack is not told at level Info: nothing to wait for
	if err := n.CaughtUp(context.Background(), m); err != nil {
		t.Fatalf("CaughtUp with nothing to tell: %v", err)
	}

	jobs.add(func(s *runtime.SubscriptionStats) { s.Dropped++ })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := n.CaughtUp(ctx, m); err == nil || !strings.Contains(err.Error(), "the narration of jobs did not catch up") {
		t.Fatalf("CaughtUp before the drop was told = %v, want an error naming jobs", err)
	}

	caughtUp := make(chan error, 1)
	go func() { caughtUp <- n.CaughtUp(context.Background(), m) }()
	select {
	case err := <-caughtUp:
		t.Fatalf("CaughtUp returned %v before the drop was told", err)
	case <-time.After(50 * time.Millisecond):
	}
	messageLog(n, slog.LevelWarn, "message dropped", "jobs", "job-3", 5, 5, "reason", "failed")
	if err := <-caughtUp; err != nil {
		t.Fatalf("CaughtUp after the drop was told: %v", err)
	}

	debug := n.WithLevel(slog.LevelDebug) // shows acks, so waits for them
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := debug.CaughtUp(ctx, m); err == nil {
		t.Fatal("CaughtUp at debug level returned before the ack was told")
	}
	messageLog(debug, slog.LevelDebug, "message handled", "jobs", "job-1", 1, 5)
	if err := debug.CaughtUp(context.Background(), m); err != nil {
		t.Fatalf("CaughtUp at debug level after the ack was told: %v", err)
	}
}

// Printf writes between lines, never inside one.
func TestNarratorPrintfWritesBetweenLines(t *testing.T) {
	n, out, _ := newTestNarrator()
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 200 {
			slog.New(n).Info("tick", "subscription", "jobs")
		}
	})
	for range 200 {
		n.Printf("title %s\n", strings.Repeat("x", 40))
	}
	wg.Wait()
	for _, l := range out.Lines() {
		if l != "title "+strings.Repeat("x", 40) && !strings.HasSuffix(l, "  tick") {
			t.Fatalf("torn line %q", l)
		}
	}
}
