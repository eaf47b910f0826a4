package zeromq_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// mountJobs mounts a recording "jobs" subscription on a new broker with
// the given queues and runs it.
func mountJobs(t *testing.T, rec *recorder, policy runtime.Policy, fail func(*Job, runtime.Metadata) error, queues ...zeromq.Option) (*zeromq.Broker, func() error) {
	t.Helper()
	app := runtime.NewApp("topology")
	zq := zeromq.New(queues...)
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{jobHandler(rec, policy, fail)}})
	return zq, streamtest.RunApp(t, app)
}

// TestPublishWaitsForTheQueueToBeBound: like a ZeroMQ PUSH, Publish waits
// (redialling) until the queue's reader binds.
func TestPublishWaitsForTheQueueToBeBound(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	logs := streamtest.NewLogRecorder(nil)
	producer := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)), zeromq.WithLogger(logs.Logger()))
	defer shutdown(t, producer)
	published := make(chan error, 1)
	go func() {
		published <- runtime.Publish(context.Background(), producer, runtime.Queue("jobs"), "job", Job{ID: 1})
	}()
	testkit.Eventually(t, "a failed dial", func() bool { return len(logs.Containing("cannot reach queue")) == 1 })
	select {
	case err := <-published:
		t.Fatalf("Publish returned %v with nobody bound", err)
	default:
	}
	rec := newRecorder()
	mountJobs(t, rec, runtime.Policy{}, nil, zeromq.Queue("jobs", zeromq.Bind(ep)))
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "jobs", 1)
}

// TestPublishGivesUpWhenItsContextEnds: with nobody bound, Publish returns
// the context's error.
func TestPublishGivesUpWhenItsContextEnds(t *testing.T) {
	testkit.NoLeaks(t)
	producer := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(freeEndpoint(t))))
	defer shutdown(t, producer)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runtime.Publish(ctx, producer, runtime.Queue("jobs"), "job", Job{ID: 1}) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Publish = %v, want context.Canceled", err)
	}
}

// TestPublishRedialsAfterTheReaderRestarts: the producer notices the lost
// connection and dials the new reader.
func TestPublishRedialsAfterTheReaderRestarts(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	producer := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)))
	defer shutdown(t, producer)

	first := newRecorder()
	_, stop := mountJobs(t, first, runtime.Policy{}, nil, zeromq.Queue("jobs", zeromq.Bind(ep)))
	publishJob(t, producer, "jobs", Job{ID: 1})
	first.waitFor(t, "jobs", 1)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the producer sees the reader gone", func() bool { return producer.Connections("jobs") == 0 })

	second := newRecorder()
	mountJobs(t, second, runtime.Policy{}, nil, zeromq.Queue("jobs", zeromq.Bind(ep)))
	publishJob(t, producer, "jobs", Job{ID: 2})
	if got := second.waitFor(t, "jobs", 1); got[0].Body != "2" {
		t.Fatalf("second reader got %+v", got)
	}
}

// TestDialingWorkerRedialsItsVentilator: a worker whose ventilator restarts
// connects to the new one.
func TestDialingWorkerRedialsItsVentilator(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	rec := newRecorder()
	app := runtime.NewApp("worker")
	app.Mount(zeromq.New(zeromq.Queue("work", zeromq.Dial(ep))),
		&runtime.Subscription{Name: "work", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, nil)}})
	streamtest.RunApp(t, app) // before any ventilator: it keeps dialling

	for i := 1; i <= 2; i++ {
		vent := zeromq.New(zeromq.Queue("work", zeromq.Ventilator(ep)))
		publishJob(t, vent, "work", Job{ID: i})
		rec.waitFor(t, "work", i)
		shutdown(t, vent)
	}
}

// TestEndpointForms: ipc endpoints, tcp://*:port and port 0 all work, and
// Addr reports where a queue is bound; retry copies find a queue bound at
// port 0.
func TestEndpointForms(t *testing.T) {
	testkit.NoLeaks(t)
	for _, ep := range []string{
		"ipc://" + filepath.Join(t.TempDir(), "jobs.sock"),
		"tcp://*:0",
		"tcp://127.0.0.1:0",
	} {
		t.Run(ep, func(t *testing.T) {
			rec := newRecorder()
			fail := func(_ *Job, md runtime.Metadata) error {
				if md.Attempt == 1 {
					return errors.New("once")
				}
				return nil
			}
			zq, _ := mountJobs(t, rec, runtime.Policy{MaxAttempts: 2, OutRetry: "jobs"}, fail, zeromq.Queue("jobs", zeromq.Bind(ep)))
			addr := zq.Addr("jobs")
			if addr == "" || strings.HasSuffix(addr, ":0") {
				t.Fatalf("Addr = %q", addr)
			}
			if strings.HasPrefix(ep, "ipc://") && addr != ep {
				t.Fatalf("Addr = %q, want %q", addr, ep)
			}
			producer := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(strings.Replace(addr, "[::]", "127.0.0.1", 1))))
			defer shutdown(t, producer)
			publishJob(t, producer, "jobs", Job{ID: 1})
			got := rec.waitFor(t, "jobs", 2)
			if got[1].MD.Attempt != 2 {
				t.Fatalf("deliveries = %+v", got)
			}
		})
	}
}

// TestConcurrencyRunsThatManyHandlersAtOnce: with concurrency 3, three
// handler calls run at once and never more.
func TestConcurrencyRunsThatManyHandlersAtOnce(t *testing.T) {
	testkit.NoLeaks(t)
	const workers = 3
	var mu sync.Mutex
	inFlight, most := 0, 0
	release := make(chan struct{})
	app := runtime.NewApp("concurrency")
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(freeEndpoint(t))))
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Concurrency: workers, Handlers: []runtime.Handler{
		runtime.Handle("job", runtime.Policy{}, func(context.Context, *Job, runtime.Metadata) runtime.Outcome {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			mu.Unlock()
			<-release
			mu.Lock()
			inFlight--
			mu.Unlock()
			return runtime.Ack()
		}),
	}})
	streamtest.RunApp(t, app)
	for i := range 2 * workers {
		publishJob(t, zq, "jobs", Job{ID: i})
	}
	testkit.Eventually(t, "three handlers in flight", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return inFlight == workers
	})
	close(release)
	testkit.Eventually(t, "all handled", func() bool { return app.Stats()[0].Acked == 2*workers })
	if most != workers {
		t.Fatalf("at most %d handlers ran at once, want %d", most, workers)
	}
}
