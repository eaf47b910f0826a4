package adapter_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// noJob returns no job: its fields cannot be read.
//
//go:noinline
func noJob() *job { return nil }

// deep calls itself n times, then runs f: a handler with a deep stack.
//
//go:noinline
func deep(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	deep(n-1, f)
}

// A panic's error line carries the first frames of its stack, from where
// it panicked (not the runtime's own frames), and says how many it left
// out; the whole stack is at debug level.
func TestPanicLineKeepsTheFirstFrames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		panic func()
	}{
		{"panic", func() { panic("kaboom") }},
		{"nil pointer", func() { fmt.Fprint(io.Discard, noJob().ID) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &probe{outcome: func(runtime.Metadata) runtime.Outcome {
				deep(20, tc.panic)
				return runtime.Ack()
			}}
			c, logs := newConsumer(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", runtime.Policy{MaxAttempts: 2})}}, runtime.RabbitMQ)
			c.Handle(t.Context(), delivery(1))

			errs := logs.find("handler panicked; treating it as a failure")
			if len(errs) != 1 {
				t.Fatalf("%d panic lines, want 1: %v", len(errs), logs.all())
			}
			stack := errs[0].attrs["stack"]
			lines := strings.Split(stack, "\n")
			if len(lines) != 11 {
				t.Fatalf("the error line's stack has %d lines, want 5 frames of 2 and a last line:\n%s", len(lines), stack)
			}
			for i := 0; i < 10; i += 2 {
				want := "adapter_test.deep" // what called the function that panicked
				if i == 0 {
					want = "adapter_test.TestPanicLineKeepsTheFirstFrames.func" // where it panicked
				}
				if !strings.Contains(lines[i], want) || !strings.HasPrefix(lines[i+1], "\t") || !strings.Contains(lines[i+1], "loglines_test.go:") {
					t.Errorf("frame %d is %q %q, want %s in loglines_test.go", i/2+1, lines[i], lines[i+1], want)
				}
			}
			if !strings.HasPrefix(lines[10], "... ") || !strings.HasSuffix(lines[10], " more frames (logged at debug level)") {
				t.Errorf("last line %q, want how many frames were left out", lines[10])
			}
			if strings.Contains(stack, "goroutine") || strings.Contains(stack, "runtime.gopanic") || strings.Contains(stack, "recoverPanic") {
				t.Errorf("the error line's stack starts before the panic:\n%s", stack)
			}

			full := logs.find("handler panic stack")
			if len(full) != 1 || full[0].level != slog.LevelDebug || full[0].attrs["message_id"] != "m-1" {
				t.Fatalf("debug stack lines %v, want one naming m-1", full)
			}
			if s := full[0].attrs["stack"]; !strings.Contains(s, "goroutine") || strings.Count(s, "adapter_test.deep") < 21 {
				t.Errorf("the debug line's stack is not the whole stack:\n%s", s)
			}
		})
	}
}

// A batch handler's panic is one error line (one panic, one stack) that
// names every message of the batch: their ids and attempts, in the
// batch's order, which is the order of md.Batch. The debug stack line
// names them too.
func TestBatchPanicLineNamesEveryMessage(t *testing.T) {
	h := runtime.HandleBatch[job]("Job", runtime.Policy{MaxAttempts: 3}, nil, func(context.Context, []*job, []runtime.Metadata) error {
		panic("no rows")
	})
	c, logs := newConsumer(batchSub(2, h), runtime.RabbitMQ)
	handleAll(c, []*adapter.Delivery{jobDelivery(1, 1), jobDelivery(2, 3)})

	errs := logs.find("handler panicked; treating it as a failure")
	if len(errs) != 1 {
		t.Fatalf("%d panic lines, want 1: %v", len(errs), logs.all())
	}
	debug := logs.find("handler panic stack")
	if len(debug) != 1 {
		t.Fatalf("%d debug stack lines, want 1: %v", len(debug), logs.all())
	}
	for _, r := range []capturedRecord{errs[0], debug[0]} {
		ids, attempts := r.attrs["message_ids"], r.attrs["attempts"]
		// The two joined the batch in either order; each id keeps its
		// own attempt.
		if !(ids == "[m-1 m-2]" && attempts == "[1 3]" || ids == "[m-2 m-1]" && attempts == "[3 1]") {
			t.Errorf("%q names message_ids %q with attempts %q, want m-1 on attempt 1 and m-2 on attempt 3", r.msg, ids, attempts)
		}
		if r.attrs["message_type"] != "Job" {
			t.Errorf("%q: message_type %q, want Job", r.msg, r.attrs["message_type"])
		}
		if _, ok := r.attrs["message_id"]; ok {
			t.Errorf("%q has a message_id %q of its own, want the batch's ids only", r.msg, r.attrs["message_id"])
		}
		if _, ok := r.attrs["attempt"]; ok {
			t.Errorf("%q has an attempt %q of its own, want the batch's attempts only", r.msg, r.attrs["attempt"])
		}
	}
}

// A batch call that returns an ack after its timeout is warned about
// once, naming every message of the batch, as a panic is.
func TestBatchLateResultLineNamesEveryMessage(t *testing.T) {
	const timeout = 10 * time.Millisecond
	h := runtime.HandleBatch[job]("Job", runtime.Policy{MaxAttempts: 3, Timeout: timeout}, nil, func(ctx context.Context, _ []*job) error {
		<-ctx.Done() // then returns nil, late
		return nil
	})
	c, logs := newConsumer(batchSub(2, h), runtime.RabbitMQ)
	for _, v := range handleAll(c, []*adapter.Delivery{jobDelivery(1, 2), jobDelivery(2, 1)}) {
		if v.Kind != adapter.VerdictAck {
			t.Errorf("verdict %v, want ack: a late ack counts", v.Kind)
		}
	}
	late := logs.find("handler returned after its timeout; its result counts, but the timeout is too short or the handler ignores its context")
	if len(late) != 1 {
		t.Fatalf("%d late-result lines, want 1: %v", len(late), logs.all())
	}
	ids, attempts := late[0].attrs["message_ids"], late[0].attrs["attempts"]
	if !(ids == "[m-1 m-2]" && attempts == "[2 1]" || ids == "[m-2 m-1]" && attempts == "[1 2]") || late[0].attrs["outcome"] != "ack" {
		t.Errorf("late-result line %v, want m-1 on attempt 2 and m-2 on attempt 1, outcome ack", late[0])
	}
}

// With debug logging off, a panic makes its error line alone.
func TestPanicStackAtDebugOnlyWhenEnabled(t *testing.T) {
	logs := streamtest.NewLogRecorder(nil)
	filtered := slog.New(levelFilter{logs.Handler(), slog.LevelInfo})
	p := &probe{outcome: func(runtime.Metadata) runtime.Outcome { panic("kaboom") }}
	sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", runtime.Policy{})}}
	c := adapter.NewConsumer(sub, runtime.Env{Logger: filtered}, adapter.Rules{Kind: runtime.RabbitMQ}, &recorder{})
	c.Handle(t.Context(), delivery(1))
	if n := len(logs.Find(slog.LevelError, "handler panicked; treating it as a failure")); n != 1 {
		t.Errorf("%d error lines, want 1", n)
	}
	if n := len(logs.Containing("panic stack")); n != 0 {
		t.Errorf("%d debug stack lines with debug off", n)
	}
}

// levelFilter passes on the records at min or above.
type levelFilter struct {
	slog.Handler
	min slog.Level
}

func (f levelFilter) Enabled(_ context.Context, l slog.Level) bool { return l >= f.min }

func (f levelFilter) WithAttrs(as []slog.Attr) slog.Handler {
	return levelFilter{f.Handler.WithAttrs(as), f.min}
}

func (f levelFilter) WithGroup(name string) slog.Handler {
	return levelFilter{f.Handler.WithGroup(name), f.min}
}

// A retry whose copy waits its delay in memory (ZeroMQ) is logged when it
// is decided, with the delay, not once the delay has passed; the copy's
// sending after it is logged at debug, so the retry is said once.
func TestDelayedRetryIsLoggedWhenDecided(t *testing.T) {
	logs := streamtest.NewLogRecorder(nil)
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithLogger(logs.Logger()))
	calls := 0
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{MaxAttempts: 2, OutRetry: "jobs"}, func(context.Context, *job, runtime.Metadata) runtime.Outcome {
			calls++
			if calls == 1 {
				return runtime.Retry().After(30 * time.Second).Because(errBoom)
			}
			return runtime.Ack()
		}),
	}})
	h.Start()
	if err := runtime.Publish(t.Context(), h.Broker(), runtime.Queue("jobs"), "Job", &job{ID: 1}, runtime.WithMessageID("m-30")); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	retried := logs.Find(slog.LevelInfo, "message will be retried")
	if len(retried) != 1 || retried[0].Attr("message_id") != "m-30" || retried[0].Attr("delay") != "30s" || retried[0].Attr("reason") != "boom" {
		t.Fatalf("before the delay passed: retry lines %v, want one for m-30 with delay 30s", retried)
	}
	if calls != 1 {
		t.Fatalf("%d calls before the delay passed", calls)
	}
	h.Advance(30 * time.Second)
	if calls != 2 {
		t.Fatalf("%d calls after the delay, want 2", calls)
	}
	if n := len(logs.Find(slog.LevelInfo, "message will be retried")); n != 1 {
		t.Errorf("%d retry lines after the delay, want still 1", n)
	}
	sent := logs.Find(slog.LevelDebug, "retry copy sent after its delay")
	if len(sent) != 1 || sent[0].Attr("message_id") != "m-30" || sent[0].Attr("delay") != "30s" {
		t.Errorf("debug lines %v, want one saying m-30's copy was sent", sent)
	}
	if m := h.App().Stats(); len(m) != 1 || m[0].Retried != 1 || m[0].Acked != 1 {
		t.Errorf("counters %+v, want 1 retried and 1 acked", m)
	}
}

// A copy the broker returned is an error that says there is no queue of
// its name: copies go queue to queue.
func TestUnroutableCopySaysThereIsNoSuchQueue(t *testing.T) {
	c, _, tr := newRecorded(failing(runtime.Policy{MaxAttempts: 2}), runtime.RabbitMQ)
	tr.send = adapter.ErrUnroutable
	_, err := c.Handle(t.Context(), delivery(1))
	want := `retry copy to "jobs.retry" unroutable; nacked without requeue: unroutable: the broker returned it: there is no queue "jobs.retry"`
	if err == nil || err.Error() != want {
		t.Errorf("Handle = %v, want %s", err, want)
	}
}
