package streamtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// Workers() handler calls run at once, never more.
func TestHarnessHonoursConcurrency(t *testing.T) {
	for _, kind := range []runtime.BrokerKind{runtime.ZeroMQ, runtime.RabbitMQ} {
		for _, concurrency := range []int{0, 3} {
			workers := max(concurrency, 1)
			t.Run(fmt.Sprintf("%s/concurrency=%d", kind, concurrency), func(t *testing.T) {
				var running, peak, handled atomic.Int32
				release := make(chan struct{})
				h := streamtest.New(t, kind, streamtest.WithQuietLogs())
				h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Concurrency: concurrency, Handlers: []runtime.Handler{
					runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome {
						n := running.Add(1)
						for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
						}
						<-release
						running.Add(-1)
						handled.Add(1)
						return runtime.Ack()
					})}})
				h.Start()
				const total = 7
				for i := range total {
					h.Publish("jobs", "Job", job{ID: uint64(i)})
				}
				for done := 0; done < total; done++ {
					want := int32(min(workers, total-done))
					testkit.Eventually(t, "the workers to be busy", func() bool { return running.Load() == want })
					release <- struct{}{}
					testkit.Eventually(t, "a handler to finish", func() bool { return handled.Load() == int32(done+1) })
				}
				h.Wait()
				if p := peak.Load(); p != int32(workers) {
					t.Errorf("at most %d handler calls ran at once, want %d", p, workers)
				}
			})
		}
	}
}

// Messages published before Start wait in their queue and are delivered
// once the subscription consumes.
func TestHarnessDeliversWhatWasPublishedBeforeStart(t *testing.T) {
	var rec calls
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
			rec.add(md)
			return runtime.Ack()
		})}})
	h.Publish("jobs", "Job", job{ID: 1}, runtime.WithMessageID("early"))
	h.Wait() // nothing consumes yet: idle at once
	if n := len(h.Queue("jobs")); n != 1 {
		t.Fatalf("jobs holds %d messages before Start, want 1", n)
	}
	h.Start()
	h.Wait()
	if mds := rec.list(); len(mds) != 1 || mds[0].MessageID != "early" {
		t.Fatalf("handler calls %+v, want the early message", mds)
	}
}

// upperCodec is JSON with its own content type, to see the App's codec used.
type upperCodec struct{ runtime.JSON }

func (upperCodec) ContentType() string { return "application/x-streamtest" }

func TestHarnessUsesTheAppCodec(t *testing.T) {
	var got []job
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs(), streamtest.WithCodec(upperCodec{}))
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(_ context.Context, j *job, _ runtime.Metadata) runtime.Outcome {
			got = append(got, *j)
			return runtime.Ack()
		})}})
	h.Start()
	h.Publish("jobs", "Job", job{ID: 42})
	h.Wait()
	ds := h.Deliveries("jobs")
	if len(ds) != 1 || ds[0].ContentType != "application/x-streamtest" {
		t.Fatalf("deliveries %+v, want one with the codec's content type", ds)
	}
	if len(got) != 1 || got[0].ID != 42 {
		t.Errorf("the handler got %+v", got)
	}
}

// Deliveries record what arrived and what became of it.
func TestDeliveryRecordsTheMessageAsItArrived(t *testing.T) {
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithQuietLogs(), streamtest.WithStart(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)))
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
			md.Headers["tenant"] = "changed by the handler"
			return runtime.Ack()
		})}})
	h.Start()
	h.Publish("jobs", "Job", job{ID: 5}, runtime.WithMessageID("m"), runtime.WithHeader("tenant", "acme"))
	h.Wait()
	ds := h.Deliveries("jobs")
	if len(ds) != 1 {
		t.Fatalf("%d deliveries", len(ds))
	}
	d := ds[0]
	var body job
	if err := json.Unmarshal(d.Body, &body); err != nil || body.ID != 5 {
		t.Errorf("body %q (%v)", d.Body, err)
	}
	if d.Subscription != "jobs" || d.MessageType != "Job" || d.MessageID != "m" || d.Attempt != 1 || d.RetryCount() != 0 {
		t.Errorf("delivery %+v", d)
	}
	if d.Headers["tenant"] != "acme" {
		t.Errorf("recorded headers %v, want them as they arrived", d.Headers)
	}
	if d.Verdict.Kind != streamtest.VerdictAck || d.Err != nil {
		t.Errorf("verdict %+v, err %v", d.Verdict, d.Err)
	}
	if !d.Time.Equal(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)) || !h.Now().Equal(d.Time) {
		t.Errorf("delivery time %v, clock %v; want the start time given", d.Time, h.Now())
	}
	if (streamtest.Delivery{Headers: map[string]string{runtime.RetryCountHeader: "x"}}).RetryCount() != 0 {
		t.Error("RetryCount of a malformed header is not 0")
	}
}

// Start fails the test when the App cannot start.
func TestHarnessStartFailsTheTestWhenTheAppCannotStart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mount func(h *streamtest.Harness)
		want  string
	}{
		{"nothing mounted", func(*streamtest.Harness) {}, "no subscriptions are mounted"},
		{"invalid subscription", func(h *streamtest.Harness) {
			h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{time.Second}, Handlers: []runtime.Handler{
				runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() })}})
		}, "retry_delay is for rabbitmq"},
		{"kind not emulated", nil, `broker kind "" is not emulated`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := newFakeTB(t)
			kind := runtime.ZeroMQ
			if tc.mount == nil {
				kind = runtime.AnyBroker
			}
			ft.run(func() {
				h := streamtest.New(ft, kind)
				if tc.mount != nil {
					tc.mount(h)
				} else {
					h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
						runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() })}})
				}
				h.Start()
				ft.Error("Start returned")
			})
			got := ft.finish()
			if !strings.Contains(got, "the app did not start") || !strings.Contains(got, tc.want) {
				t.Errorf("failures %q, want the start error mentioning %q", got, tc.want)
			}
			if strings.Contains(got, "Start returned") {
				t.Error("Start returned instead of failing the test")
			}
		})
	}
}

// At the end of a test the harness fails it when a handler is still busy
// and the App's run ended with an error.
func TestHarnessCleanupReportsWorkLeftRunning(t *testing.T) {
	ft := newFakeTB(t)
	ft.run(func() {
		h := streamtest.New(ft, runtime.RabbitMQ,
			streamtest.WithWaitTimeout(50*time.Millisecond),
			streamtest.WithShutdownTimeout(50*time.Millisecond))
		h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
			runtime.Handle("Job", runtime.Policy{}, func(ctx context.Context, _ *job, _ runtime.Metadata) runtime.Outcome {
				<-ctx.Done() // a handler stuck until its context ends
				return runtime.Ack()
			})}})
		h.Start()
		h.Publish("jobs", "Job", job{ID: 1})
	})
	got := ft.finish()
	for _, want := range []string{
		"at the end of the test: streamtest: not idle: 1 handler calls in progress",
		"the app's run ended with an error",
		"1 handler calls still running, their contexts are now cancelled",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("failures %q lack %q", got, want)
		}
	}
}

// Wait fails the test, saying what is busy, when the broker does not become
// idle in time.
func TestHarnessWaitFailsWhenNeverIdle(t *testing.T) {
	ft := newFakeTB(t)
	release := make(chan struct{})
	ft.run(func() {
		h := streamtest.New(ft, runtime.ZeroMQ, streamtest.WithWaitTimeout(20*time.Millisecond))
		h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
			runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome {
				<-release
				return runtime.Ack()
			})}})
		h.Start()
		h.Publish("jobs", "Job", job{ID: 1})
		h.Publish("jobs", "Job", job{ID: 2})
		h.Wait()
	})
	close(release)
	got := ft.finish()
	if !strings.Contains(got, "1 handler calls in progress, 1 messages queued for jobs") {
		t.Errorf("failures %q, want a description of the busy broker", got)
	}
}

// WithLogger also sends every record to the given logger; WithAppName names
// the App.
func TestHarnessOptions(t *testing.T) {
	forward := streamtest.NewLogRecorder(nil)
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithLogger(forward.Logger()), streamtest.WithAppName("billing"))
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome {
			return runtime.DropNow()
		})}})
	h.Start()
	h.Publish("jobs", "Job", job{ID: 1}, runtime.WithMessageID("d"))
	h.Wait()
	if h.App().Name() != "billing" {
		t.Errorf("App().Name() = %q", h.App().Name())
	}
	if h.Clock() != h.Broker().Clock() {
		t.Error("the harness and its broker have different clocks")
	}
	got := forward.Find(slog.LevelWarn, "message dropped")
	if len(got) != 1 || got[0].Attr("subscription") != "jobs" || got[0].Attr("message_id") != "d" {
		t.Errorf("the forward logger got %v", forward.Records())
	}
	if len(h.Logs().Find(slog.LevelWarn, "message dropped")) != 1 {
		t.Error("the harness did not record the warning as well")
	}
}

// WithAppOptions reaches the App: here a middleware and a start hook run
// on the harness as they would in the service.
func TestHarnessAppOptions(t *testing.T) {
	var started atomic.Bool
	var wrapped atomic.Int32
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithAppOptions(
		runtime.OnStart(func(context.Context) error { started.Store(true); return nil }),
		runtime.WithMiddleware(func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
			wrapped.Add(1)
			return next(ctx, msg, md)
		}),
	))
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() })}})
	h.Start()
	h.Publish("jobs", "Job", job{ID: 1})
	h.Wait()
	if !started.Load() || wrapped.Load() != 1 {
		t.Errorf("start hook ran: %v; middleware calls: %d; want true and 1", started.Load(), wrapped.Load())
	}
}

// Misuse fails the test with a message saying what went wrong.
func TestHarnessMisuseFailsTheTest(t *testing.T) {
	for _, tc := range []struct {
		name string
		use  func(h *streamtest.Harness)
		want string
	}{
		{"Start twice", func(h *streamtest.Harness) { h.Start(); h.Start() }, "streamtest: Start called twice"},
		{"Publish what does not encode", func(h *streamtest.Harness) {
			h.Start()
			h.Publish("jobs", "Job", make(chan int))
		}, `streamtest: runtime: publish Job to "jobs": runtime: encode: json`},
		{"Advance while a handler never finishes", func(h *streamtest.Harness) {
			h.Start()
			h.Publish("jobs", "Job", job{ID: 1})
			h.Advance(time.Second)
		}, "streamtest: not idle: 1 handler calls in progress"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := newFakeTB(t)
			release := make(chan struct{})
			ft.run(func() {
				h := streamtest.New(ft, runtime.ZeroMQ, streamtest.WithWaitTimeout(20*time.Millisecond))
				h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
					runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome {
						<-release
						return runtime.Ack()
					})}})
				tc.use(h)
				ft.Error("the misuse went unnoticed")
			})
			close(release)
			got := ft.finish()
			if !strings.Contains(got, tc.want) || strings.Contains(got, "went unnoticed") {
				t.Errorf("failures %q, want %q", got, tc.want)
			}
		})
	}
}

// RetryCount reads the retry count header the harness was configured with,
// not the default one.
func TestDeliveryRetryCountReadsTheConfiguredHeader(t *testing.T) {
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithQuietLogs(), streamtest.WithRetryCountHeader("x-tries"))
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Broker: runtime.ZeroMQ, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{MaxAttempts: 3, OutRetry: "jobs"}, func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
			if md.Attempt < 3 {
				return runtime.Retry()
			}
			return runtime.Ack()
		})}})
	h.Start()
	h.Publish("jobs", "Job", job{ID: 1})
	h.Wait()
	h.Advance(time.Hour)
	h.Wait()
	ds := h.Deliveries("jobs")
	if len(ds) != 3 {
		t.Fatalf("%d deliveries, want 3", len(ds))
	}
	for i, d := range ds {
		if d.Headers["x-tries"] == "" && i > 0 {
			t.Errorf("delivery %d has no x-tries header: %v", i+1, d.Headers)
		}
		if d.RetryCount() != i {
			t.Errorf("delivery %d: RetryCount %d, want %d (headers %v)", i+1, d.RetryCount(), i, d.Headers)
		}
	}
}
