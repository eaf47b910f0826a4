package zeromq_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/streamgen/streamgen/internal/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// TestVentilatorHandsEachJobToExactlyOneWorker: a ventilator with two
// dialing workers and 1,000 jobs: every job is handled once, by one worker,
// and both workers get a share.
func TestVentilatorHandsEachJobToExactlyOneWorker(t *testing.T) {
	testkit.NoLeaks(t)
	const jobs = 1000
	ep := freeEndpoint(t)
	vent := zeromq.New(zeromq.Queue("work", zeromq.Ventilator(ep)))
	defer shutdown(t, vent)

	var mu sync.Mutex
	count := map[string]int{}
	perWorker := map[string]int{}
	for _, name := range []string{"worker-a", "worker-b"} {
		app := runtime.NewApp(name)
		app.Mount(zeromq.New(zeromq.Queue("work", zeromq.Dial(ep))), &runtime.Subscription{
			Name: "work", Concurrency: 4,
			Handlers: []runtime.Handler{runtime.Handle("job", runtime.Policy{}, func(_ context.Context, _ *Job, md runtime.Metadata) runtime.Outcome {
				mu.Lock()
				count[md.MessageID]++
				perWorker[name]++
				mu.Unlock()
				return runtime.Ack()
			})},
		})
		streamtest.RunApp(t, app)
	}
	if err := vent.Listen(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "two workers connected", func() bool { return vent.Connections("work") == 2 })
	for i := range jobs {
		publishJob(t, vent, "work", Job{ID: i}, runtime.WithMessageID(fmt.Sprint("job-", i)))
	}

	handled := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, c := range count {
			n += c
		}
		return n
	}
	testkit.Eventually(t, fmt.Sprintf("%d jobs handled", jobs), func() bool { return handled() >= jobs })
	mu.Lock()
	defer mu.Unlock()
	if len(count) != jobs {
		t.Fatalf("%d distinct jobs handled, want %d", len(count), jobs)
	}
	for id, c := range count {
		if c != 1 {
			t.Errorf("job %s handled %d times", id, c)
		}
	}
	if perWorker["worker-a"] == 0 || perWorker["worker-b"] == 0 {
		t.Fatalf("one worker got everything: %v", perWorker)
	}
	t.Logf("share per worker: %v", perWorker)
}

// TestVentilatorHandsOnWhenAWorkerLeaves: after a worker stops, the jobs go
// to the one that is left.
func TestVentilatorHandsOnWhenAWorkerLeaves(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	vent := zeromq.New(zeromq.Queue("work", zeromq.Ventilator(ep)))
	defer shutdown(t, vent)

	recs := map[string]*recorder{}
	stops := map[string]func() error{}
	for _, name := range []string{"a", "b"} {
		rec := newRecorder()
		recs[name] = rec
		app := runtime.NewApp(name)
		app.Mount(zeromq.New(zeromq.Queue("work", zeromq.Dial(ep))),
			&runtime.Subscription{Name: "work", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, nil)}})
		stops[name] = streamtest.RunApp(t, app)
	}
	publishJob(t, vent, "work", Job{ID: 0})
	testkit.Eventually(t, "two workers connected", func() bool { return vent.Connections("work") == 2 })
	// A job still on its way to a worker that stops is lost (ZeroMQ
	// stores nothing): let job 0 arrive first.
	testkit.Eventually(t, "job 0 handled", func() bool { return len(recs["a"].All())+len(recs["b"].All()) == 1 })
	if err := stops["a"](); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "worker a gone", func() bool { return vent.Connections("work") == 1 })
	before := len(recs["a"].All())
	for i := 1; i <= 20; i++ {
		publishJob(t, vent, "work", Job{ID: i})
	}
	testkit.Eventually(t, "worker b handles the rest", func() bool { return len(recs["b"].All())+before >= 21 })
	if n := len(recs["a"].All()); n != before {
		t.Fatalf("stopped worker a handled %d more", n-before)
	}
}
