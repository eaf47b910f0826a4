package rabbitmq

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// withheld is a publishing channel stand-in that confirms nothing until
// released, then everything, in order.
type withheld struct {
	release   chan struct{}
	once      sync.Once
	published atomic.Int64
}

func newWithheld() *withheld { return &withheld{release: make(chan struct{})} }

func (w *withheld) open(context.Context) (publishChannel, error) {
	return countingChannel{newFakeChannel(func(seq uint64, _ string, _ amqp.Publishing) (*amqp.Return, *amqp.Confirmation) {
		<-w.release
		return nil, ack(seq)
	}), &w.published}, nil
}

// countingChannel counts the publishes that reach it. A publish is
// counted before it is handed on, since its confirm may arrive (and the
// test go on) before the call returns.
type countingChannel struct {
	*fakeChannel
	n *atomic.Int64
}

func (c countingChannel) publishDeferred(ctx context.Context, exchange, key string, mandatory bool, msg amqp.Publishing) (deferredConfirm, error) {
	c.n.Add(1)
	dc, err := c.fakeChannel.publishDeferred(ctx, exchange, key, mandatory, msg)
	if err != nil {
		c.n.Add(-1)
	}
	return dc, err
}

func (w *withheld) confirm() { w.once.Do(func() { close(w.release) }) }

// A retry copy frees the handler's slot as soon as it is sent: with one
// handler and no confirm yet, every delivery of the prefetch window is
// handled, and each original is acknowledged once its copy's confirm
// arrives.
func TestRetryCopiesDoNotHoldTheHandlerSlot(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("pipeline")
	b := newTestBroker(WithConfirmTimeout(time.Minute))
	w := newWithheld()
	t.Cleanup(w.confirm)
	b.pub.open = w.open
	var c calls
	s := sub(q, time.Minute, handler("Job", runtime.Policy{MaxAttempts: 2}, &c, alwaysFail))
	s.Prefetch = 5 // one handler at a time
	a := runApp(t, b, s)

	fillJobs(adm, q, 5)
	// A copy is published just after its handler returns: both are waited
	// for, and neither comes while a slot is held for a confirm.
	testkit.Eventually(t, "five deliveries handled and their copies published while no copy is confirmed", func() bool {
		return c.len() == 5 && w.published.Load() == 5
	})
	if n := adm.unacked(q); n != 5 {
		t.Errorf("%d originals unacked before the confirms, want 5: an original is acked only once its copy is confirmed", n)
	}
	if st := a.stats(q); st.Retried != 0 {
		t.Errorf("%d retries counted before any confirm", st.Retried)
	}
	w.confirm()
	testkit.Eventually(t, "the five originals to be acked", func() bool { return adm.unacked(q) == 0 && adm.ready(q) == 0 })
	testkit.Eventually(t, "five retries to be counted", func() bool { return a.stats(q).Retried == 5 })
}

// Shutdown waits for the copies still awaiting their confirm, and settles
// their originals, before it closes the connections.
func TestShutdownWaitsForCopiesAwaitingTheirConfirm(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("pipeline-shutdown")
	b := newTestBroker(WithConfirmTimeout(time.Minute))
	w := newWithheld()
	t.Cleanup(w.confirm)
	b.pub.open = w.open
	var c calls
	a := runApp(t, b, sub(q, time.Minute, handler("Job", runtime.Policy{MaxAttempts: 2}, &c, alwaysFail)))
	fillJobs(adm, q, 1)
	testkit.Eventually(t, "the copy to be published", func() bool { return w.published.Load() == 1 })
	stopped := make(chan error, 1)
	go func() { stopped <- a.stop() }()
	select {
	case err := <-stopped:
		t.Fatalf("the App stopped (%v) while a copy awaited its confirm", err)
	case <-time.After(200 * time.Millisecond):
	}
	w.confirm()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if n := adm.ready(q); n != 0 {
		t.Errorf("%d messages back in the queue: the original of the confirmed copy was not acked", n)
	}
	if st := a.stats(q); st.Retried != 1 || st.Failed != 0 {
		t.Errorf("stats %+v, want one retry", st)
	}
}

// No more copies await their confirm at once than the runner allows: a
// further Send waits for a place, and takes it once a confirm frees one.
func TestCopiesAwaitingAConfirmAreBounded(t *testing.T) {
	testkit.NoLeaks(t)
	b := newTestBroker(WithConfirmTimeout(time.Minute))
	w := newWithheld()
	b.pub.open = w.open
	t.Cleanup(func() {
		w.confirm()
		_ = b.Close()
	})
	s := sub("q", time.Minute, handler("Job", runtime.Policy{MaxAttempts: 2}, &calls{}, alwaysFail))
	s.Prefetch = 3
	r := newRunner(b, s, runtime.Env{})
	var outcomes sync.WaitGroup
	var sent atomic.Int64
	for i := range 5 {
		outcomes.Add(1)
		go func() {
			d := &adapter.Delivery{Raw: &amqp.Delivery{MessageId: itoa(i), Body: []byte("{}")}}
			r.Send(t.Context(), d, &adapter.Copy{Kind: adapter.RetryCopy, Queue: "q.retry", MessageID: itoa(i)}, func(err error) {
				if err != nil {
					t.Errorf("copy %d: %v", i, err)
				}
				outcomes.Done()
			})
			sent.Add(1)
		}()
	}
	testkit.Eventually(t, "three copies to be published", func() bool { return w.published.Load() == 3 })
	time.Sleep(50 * time.Millisecond)
	if n := sent.Load(); n != 3 {
		t.Errorf("%d Sends returned while three copies await their confirm, want 3", n)
	}
	w.confirm()
	outcomes.Wait()
	if n := w.published.Load(); n != 5 {
		t.Errorf("%d copies published in the end, want 5", n)
	}
}

// When the publishing channel closes with many copies awaiting their
// confirm, every one fails at once, and each original is requeued after
// its own pause: the pauses run side by side, not one after the other
// while the originals hold the prefetch window. The App's clock is a fake
// one, so the test sees the ten pauses pending together.
func TestFailedCopiesPauseSideBySide(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("pipeline-fail")
	clock := streamtest.NewClock(time.Time{})
	b := newTestBroker(WithConfirmTimeout(time.Hour))
	var mu sync.Mutex
	var channels []*fakeChannel
	b.pub.open = func(context.Context) (publishChannel, error) {
		// The first channel confirms nothing; those after it publish
		// every copy to the broker and confirm it: the originals come
		// back, and are set aside on the suspect queue.
		mu.Lock()
		first := len(channels) == 0
		mu.Unlock()
		f := newFakeChannel(func(seq uint64, key string, msg amqp.Publishing) (*amqp.Return, *amqp.Confirmation) {
			if first {
				return nil, nil
			}
			adm.publish(key, msg)
			return nil, ack(seq)
		})
		mu.Lock()
		channels = append(channels, f)
		mu.Unlock()
		return f, nil
	}
	var c calls
	s := sub(q, time.Minute, handler("Job", runtime.Policy{MaxAttempts: 2}, &c, func(_ *job, md runtime.Metadata) runtime.Outcome {
		if cameBack(md) {
			return runtime.Ack()
		}
		return runtime.Retry().Because(errFailed)
	}))
	s.Prefetch = 10
	a := startAppWithClock(t, b, clock, s)

	const n = 10
	fillJobs(adm, q, n)
	testkit.Eventually(t, "ten copies awaiting their confirm", func() bool { return c.len() == n })
	mu.Lock()
	first := channels[len(channels)-1]
	mu.Unlock()
	_ = first.Close() // the channel is lost: the ten copies fail
	testkit.Eventually(t, "the ten pauses before the requeues to be pending together", func() bool {
		pauses := 0
		for _, d := range clock.PendingDelays() {
			if d >= 50*time.Millisecond && d <= 5*time.Second {
				pauses++
			}
		}
		return pauses == n
	})
	clock.Advance(5 * time.Second)
	testkit.Eventually(t, "the ten originals to be delivered again", func() bool {
		back := 0
		for _, md := range c.metadata() {
			if cameBack(md) {
				back++
			}
		}
		return back == n
	})
	testkit.Eventually(t, "the queue to be empty", func() bool { return adm.ready(q) == 0 && adm.unacked(q) == 0 })
	if st := a.stats(q); st.Failed != n || st.Acked != n {
		t.Errorf("stats %+v, want %d failed copies and %d acks", st, n, n)
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
}

// startAppWithClock runs an App on clock with b and subs until the test
// ends, and waits until it is ready.
func startAppWithClock(t *testing.T, b *Broker, clock clock.Clock, subs ...*runtime.Subscription) *app {
	t.Helper()
	logs := streamtest.NewLogRecorder(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	ra := runtime.NewApp("streamgen-test", runtime.WithLogger(logs.Logger()), runtime.WithClock(clock), runtime.WithShutdownTimeout(20*time.Second))
	ra.Mount(b, subs...)
	ctx, cancel := context.WithCancel(context.Background())
	a := &app{t: t, app: ra, broker: b, logs: logs, cancel: cancel, done: make(chan struct{})}
	go func() {
		a.err = ra.Run(ctx)
		close(a.done)
	}()
	t.Cleanup(func() { _ = a.stop() })
	a.waitReady()
	return a
}
