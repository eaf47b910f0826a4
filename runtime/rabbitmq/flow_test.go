package rabbitmq

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// gauge tracks how many handler calls run at once.
type gauge struct {
	mu             sync.Mutex
	running, most  int
	done           int
	handledIDs     []int
	ctxErrAtFinish []error
}

func (g *gauge) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running++
	g.most = max(g.most, g.running)
}

func (g *gauge) leave(id int, ctxErr error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	g.done++
	g.handledIDs = append(g.handledIDs, id)
	g.ctxErrAtFinish = append(g.ctxErrAtFinish, ctxErr)
}

func (g *gauge) read() (running, most, done int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running, g.most, g.done
}

// gatedHandler blocks each call until gate is closed (or its context ends).
func gatedHandler(g *gauge, gate <-chan struct{}) runtime.Handler {
	return runtime.Handle("Job", runtime.Policy{}, func(ctx context.Context, j *job, _ runtime.Metadata) runtime.Outcome {
		g.enter()
		select {
		case <-gate:
		case <-ctx.Done():
		}
		g.leave(j.ID, ctx.Err())
		return runtime.OutcomeOf(ctx.Err())
	})
}

func publishJobs(t *testing.T, adm *admin, q string, n int) {
	t.Helper()
	for i := range n {
		publishJob(t, adm, q, "Job", job{ID: i})
	}
}

// At most concurrency handler calls run at once, and the broker holds at
// most prefetch deliveries unacknowledged.
func TestPrefetchAndConcurrencyAreHonoured(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("flow")
	const concurrency, prefetch, total = 3, 5, 20
	var g gauge
	gate := make(chan struct{})
	s := sub(q, 0, gatedHandler(&g, gate))
	s.Concurrency, s.Prefetch = concurrency, prefetch
	a := runApp(t, newTestBroker(), s)
	publishJobs(t, adm, q, total)

	testkit.Eventually(t, "the handler slots to fill", func() bool { r, _, _ := g.read(); return r == concurrency })
	testkit.Eventually(t, "the broker to hold prefetch deliveries unacked", func() bool { return adm.unacked(q) == prefetch })
	if n := adm.ready(q); n != total-prefetch {
		t.Errorf("%d messages ready, want %d (all but the prefetched)", n, total-prefetch)
	}
	if r, most, _ := g.read(); r != concurrency || most != concurrency {
		t.Errorf("running %d, at most %d; want %d", r, most, concurrency)
	}
	close(gate)
	testkit.Eventually(t, "every message to be handled", func() bool { return a.stats(q).Acked == total })
	if _, most, done := g.read(); most != concurrency || done != total {
		t.Errorf("at most %d ran at once over %d calls; want %d over %d", most, done, concurrency, total)
	}
}

func TestDefaultPrefetchCoversConcurrency(t *testing.T) {
	testkit.NoLeaks(t)
	b := New(brokerURL(), WithDefaultPrefetch(8))
	mk := func(prefetch, concurrency int) int {
		s := &runtime.Subscription{Name: "q", Prefetch: prefetch, Concurrency: concurrency,
			Handlers: []runtime.Handler{runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() })}}
		return newRunner(b, s, runtime.Env{}).prefetch
	}
	if got := mk(0, 1); got != 8 {
		t.Errorf("default prefetch = %d, want 8", got)
	}
	if got := mk(0, 32); got != 32 {
		t.Errorf("default prefetch with concurrency 32 = %d, want 32", got)
	}
	if got := mk(3, 32); got != 3 {
		t.Errorf("prefetch set to 3 = %d, want 3", got)
	}
	if got := New(brokerURL()).opts.prefetch; got != DefaultPrefetch {
		t.Errorf("prefetch without options = %d, want %d", got, DefaultPrefetch)
	}
}

// Graceful shutdown lets the handler in flight finish (its context live)
// and settle, hands the prefetched rest back, and loses nothing.
func TestGracefulShutdownLosesNothing(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("graceful")
	const total = 10
	var g gauge
	gate := make(chan struct{})
	s := sub(q, 0, gatedHandler(&g, gate))
	s.Prefetch = 5
	a := runApp(t, newTestBroker(), s)
	publishJobs(t, adm, q, total)
	testkit.Eventually(t, "a handler to run", func() bool { r, _, _ := g.read(); return r == 1 })

	stopped := make(chan error, 1)
	go func() { stopped <- a.stop() }()
	testkit.Eventually(t, "the prefetched deliveries to go back to the queue", func() bool { return adm.ready(q) == total-1 })
	select {
	case err := <-stopped:
		t.Fatalf("the App stopped (%v) while a handler was still running", err)
	default:
	}
	close(gate)
	if err := <-stopped; err != nil {
		t.Fatalf("graceful stop: %v", err)
	}

	g.mu.Lock()
	handled, ctxErrs := append([]int(nil), g.handledIDs...), append([]error(nil), g.ctxErrAtFinish...)
	g.mu.Unlock()
	if len(handled) != 1 || ctxErrs[0] != nil {
		t.Fatalf("handled %v with context errors %v; want one call whose context stayed live", handled, ctxErrs)
	}
	if st := a.stats(q); st.Acked != 1 || st.Failed != 0 {
		t.Errorf("stats = %+v, want the in-flight message acked", st)
	}
	if n := adm.ready(q); n != total-1 {
		t.Fatalf("%d messages back in the queue, want %d", n, total-1)
	}
	for range total - 1 {
		d, _ := adm.get(q)
		if strings.Contains(string(d.Body), `"id":`+itoa(handled[0])+`}`) {
			t.Errorf("the handled message %d is back in the queue", handled[0])
		}
	}
}

// When the shutdown deadline passes, the handler's context is cancelled
// and its delivery is left to the broker: no retry copy is sent, the
// message is back in the queue.
func TestShutdownDeadlineLeavesTheDeliveryToTheBroker(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("deadline")
	var c calls
	started := make(chan struct{}, 1)
	s := sub(q, time.Minute, runtime.Handle("Job", runtime.Policy{MaxAttempts: 3, DeadLetter: q + ".dl"}, func(ctx context.Context, j *job, md runtime.Metadata) runtime.Outcome {
		c.add(j, md)
		started <- struct{}{}
		<-ctx.Done()
		return runtime.OutcomeOf(ctx.Err())
	}))
	a := startApp(t, newTestBroker(), 300*time.Millisecond, s)
	a.waitReady()
	publishJob(t, adm, q, "Job", job{ID: 1})
	<-started
	err := a.stop()
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("stop = %v, want the deadline error", err)
	}
	// The broker requeues the delivery when it sees the consuming
	// channel close, which may come after Run returned.
	testkit.Eventually(t, "the unfinished message back in the queue", func() bool { return adm.ready(q) >= 1 })
	if n := adm.ready(q); n != 1 {
		t.Errorf("%d messages in the queue after the stop, want the unfinished one back", n)
	}
	if n := adm.ready(q+".retry") + adm.ready(q+".dl"); n != 0 {
		t.Errorf("%d copies were sent for a handler cut short by the shutdown", n)
	}
	errs := settleErrors(a)
	if len(errs) != 1 || !strings.Contains(errs[0], "left to the broker") {
		t.Errorf("settle errors = %q, want the delivery reported as left to the broker", errs)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
