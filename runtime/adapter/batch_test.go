package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// batchProbe is a batch handler that records its calls.
type batchProbe struct {
	mu    sync.Mutex
	calls [][]uint64 // the job ids of each call
	mds   [][]runtime.Metadata
	err   func(jobs []*job) error
}

func (p *batchProbe) handler(policy runtime.Policy) runtime.Handler {
	return runtime.HandleBatch[job]("Job", policy, nil, func(ctx context.Context, jobs []*job, mds []runtime.Metadata) error {
		ids := make([]uint64, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
		}
		p.mu.Lock()
		p.calls = append(p.calls, ids)
		p.mds = append(p.mds, mds)
		p.mu.Unlock()
		if p.err == nil {
			return nil
		}
		return p.err(jobs)
	})
}

func (p *batchProbe) callIDs() [][]uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// jobDelivery is the attempt-th delivery of job id.
func jobDelivery(id uint64, attempt int) *adapter.Delivery {
	return &adapter.Delivery{MessageID: fmt.Sprintf("m-%d", id), Type: "Job", ContentType: "application/json",
		Body: fmt.Appendf(nil, `{"id":%d}`, id), Headers: retryCount(attempt - 1)}
}

// handleAll hands every delivery to c at once, as an adapter's workers
// do, and returns the verdict of each.
func handleAll(c *adapter.Consumer, ds []*adapter.Delivery) []adapter.Verdict {
	vs := make([]adapter.Verdict, len(ds))
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Go(func() { vs[i], _ = c.Handle(context.Background(), d) })
	}
	wg.Wait()
	return vs
}

func batchSub(size int, h runtime.Handler) *runtime.Subscription {
	return &runtime.Subscription{Name: "jobs", BatchSize: size, BatchWait: time.Hour, Handlers: []runtime.Handler{h}}
}

func TestBatchFullIsOneCallAndNilAcksEveryMessage(t *testing.T) {
	p := &batchProbe{}
	c, _, tr := newRecorded(batchSub(3, p.handler(runtime.Policy{MaxAttempts: 3})), runtime.RabbitMQ)
	vs := handleAll(c, []*adapter.Delivery{jobDelivery(1, 1), jobDelivery(2, 2), jobDelivery(3, 1)})
	calls := p.callIDs()
	if len(calls) != 1 || len(calls[0]) != 3 {
		t.Fatalf("calls = %v, want one call of 3 (the wait is an hour, so only a full batch runs)", calls)
	}
	for i, v := range vs {
		if v.Kind != adapter.VerdictAck {
			t.Errorf("delivery %d: verdict %v, want ack", i, v)
		}
	}
	if got := tr.actions(); got != "ack, ack, ack" {
		t.Errorf("actions = %q, want three acks", got)
	}
	if got := c.Metrics().Acked.Load(); got != 3 {
		t.Errorf("acked = %d, want 3: metrics count messages, not calls", got)
	}
	// Each message's Metadata is its own.
	attempts := map[string]int{}
	for _, md := range p.mds[0] {
		attempts[md.MessageID] = md.Attempt
	}
	if attempts["m-1"] != 1 || attempts["m-2"] != 2 || attempts["m-3"] != 1 {
		t.Errorf("attempts = %v, want m-1:1 m-2:2 m-3:1", attempts)
	}
}

// fillWatcher is a recorder that is also an adapter.FillWatcher: it
// keeps how many deliveries wait in a batch filling, and every change.
type fillWatcher struct {
	*recorder
	mu      sync.Mutex
	filling int
	deltas  []int
}

func (w *fillWatcher) Filling(delta int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.filling += delta
	w.deltas = append(w.deltas, delta)
}

func (w *fillWatcher) state() (int, []int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.filling, slices.Clone(w.deltas)
}

// A batch that is not full waits its wait on the App's clock: moved short
// of it, nothing runs; moved past it, the batch runs with what it holds.
// Meanwhile the FillWatcher counts the deliveries waiting in it, and the
// batch's timer is the clock's one pending timer.
func TestBatchPartialRunsAfterItsWaitOnTheClock(t *testing.T) {
	p := &batchProbe{}
	sub := batchSub(100, p.handler(runtime.Policy{}))
	sub.BatchWait = time.Minute
	clk := streamtest.NewClock(time.Time{})
	w := &fillWatcher{recorder: &recorder{}}
	c := adapter.NewConsumer(sub, runtime.Env{Clock: clk}, adapter.Rules{Kind: runtime.RabbitMQ}, w)
	done := make(chan adapter.Verdict, 2)
	for i := range 2 {
		go func() {
			v, _ := c.Handle(context.Background(), jobDelivery(uint64(i+1), 1))
			done <- v
		}()
	}
	testkit.Eventually(t, "both deliveries to wait in the batch", func() bool { n, _ := w.state(); return n == 2 })
	if d := clk.PendingDelays(); !slices.Equal(d, []time.Duration{time.Minute}) {
		t.Errorf("pending timers %v, want the batch's wait of 1m", d)
	}
	clk.Advance(time.Minute - time.Nanosecond)
	if calls := p.callIDs(); len(calls) != 0 {
		t.Fatalf("calls = %v before the batch's wait passed", calls)
	}
	clk.Advance(time.Nanosecond)
	for range 2 {
		if v := <-done; v.Kind != adapter.VerdictAck {
			t.Errorf("verdict %v, want ack", v)
		}
	}
	if calls := p.callIDs(); len(calls) != 1 || len(calls[0]) != 2 {
		t.Fatalf("calls = %v, want one call of 2", calls)
	}
	if n, deltas := w.state(); n != 0 || !slices.Equal(deltas, []int{1, 1, -2}) {
		t.Errorf("filling %d after changes %v, want 1, 1, -2: none waits once the batch runs", n, deltas)
	}
}

// A batch that fills runs at once, its wait's timer stopped; the delivery
// that fills it never counts as waiting.
func TestBatchFullStopsItsWait(t *testing.T) {
	p := &batchProbe{}
	clk := streamtest.NewClock(time.Time{})
	w := &fillWatcher{recorder: &recorder{}}
	c := adapter.NewConsumer(batchSub(3, p.handler(runtime.Policy{})), runtime.Env{Clock: clk}, adapter.Rules{Kind: runtime.RabbitMQ}, w)
	handleAll(c, []*adapter.Delivery{jobDelivery(1, 1), jobDelivery(2, 1), jobDelivery(3, 1)})
	if calls := p.callIDs(); len(calls) != 1 || len(calls[0]) != 3 {
		t.Fatalf("calls = %v, want one call of 3", calls)
	}
	if n, deltas := w.state(); n != 0 || !slices.Equal(deltas, []int{1, 1, -2}) {
		t.Errorf("filling %d after changes %v, want 1, 1, -2", n, deltas)
	}
	if n := clk.Pending(); n != 0 {
		t.Errorf("%d timers pending, want the full batch's wait stopped", n)
	}
}

func TestBatchStopRunsTheBatchInHandAtOnce(t *testing.T) {
	p := &batchProbe{}
	c, _ := newConsumer(batchSub(100, p.handler(runtime.Policy{})), runtime.RabbitMQ)
	done := make(chan adapter.Verdict)
	go func() {
		v, _ := c.Handle(context.Background(), jobDelivery(1, 1))
		done <- v
	}()
	for c.BatchFilling() == 0 { // the delivery joined the batch, which waits an hour
		time.Sleep(time.Millisecond)
	}
	c.Stop()
	select {
	case v := <-done:
		if v.Kind != adapter.VerdictAck {
			t.Errorf("verdict %v, want ack", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the batch in hand did not run when the Consumer stopped (its wait is an hour)")
	}
}

func TestBatchAfterTheShutdownDeadlineIsLeftToTheBroker(t *testing.T) {
	p := &batchProbe{}
	c, _, tr := newRecorded(batchSub(100, p.handler(runtime.Policy{MaxAttempts: 3})), runtime.RabbitMQ)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := c.Handle(ctx, jobDelivery(1, 1))
		done <- err
	}()
	for c.Metrics().Delivered.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, adapter.ErrLeftToBroker) {
		t.Errorf("err = %v, want ErrLeftToBroker", err)
	}
	if got := tr.actions(); got != "" {
		t.Errorf("actions = %q, want none: the delivery is handed back unsettled", got)
	}
	if calls := p.callIDs(); len(calls) != 0 {
		t.Errorf("calls = %v, want none", calls)
	}
}

func TestBatchErrorAppliesToEachMessageByItsOwnAttempt(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want []string // the verdict of the messages on attempts 1 and 3
	}{
		{"plain error", errBoom, []string{"retry boom", "park failed on attempt 3 of 3: boom"}},
		{"RetryAfter", runtime.RetryAfter(time.Minute, errBoom), []string{"retry boom", "park failed on attempt 3 of 3: boom"}},
		{"DeadLetter", runtime.DeadLetter(errBoom), []string{"park dead-lettered by the handler: boom", "park dead-lettered by the handler: boom"}},
		{"panic", nil, []string{"retry handler panicked: no rows", "park failed on attempt 3 of 3: handler panicked: no rows"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &batchProbe{err: func([]*job) error {
				if tc.err == nil {
					panic("no rows")
				}
				return tc.err
			}}
			c, _ := newConsumer(batchSub(2, p.handler(runtime.Policy{MaxAttempts: 3, DeadLetter: "dl"})), runtime.ZeroMQ)
			vs := handleAll(c, []*adapter.Delivery{jobDelivery(1, 1), jobDelivery(2, 3)})
			for i, v := range vs {
				if got := v.Kind.String() + " " + v.Reason; got != tc.want[i] {
					t.Errorf("message on attempt %d: %q, want %q", []int{1, 3}[i], got, tc.want[i])
				}
			}
			if tc.name == "RetryAfter" && vs[0].Delay != time.Minute {
				t.Errorf("retry delay %v, want the 1m asked for", vs[0].Delay)
			}
		})
	}
}

func TestBatchFailuresFailOnlyTheMessagesNamed(t *testing.T) {
	p := &batchProbe{err: func(jobs []*job) error {
		var f runtime.BatchFailures
		for i, j := range jobs {
			switch j.ID {
			case 2:
				f.Fail(i, errors.New("duplicate key"))
			case 3:
				f.Fail(i, runtime.DeadLetter(errors.New("bad row")))
			}
		}
		return f.Err()
	}}
	c, _, tr := newRecorded(batchSub(3, p.handler(runtime.Policy{MaxAttempts: 3, DeadLetter: "dl"})), runtime.RabbitMQ)
	ds := []*adapter.Delivery{jobDelivery(1, 1), jobDelivery(2, 1), jobDelivery(3, 1)}
	vs := handleAll(c, ds)
	byID := map[string]string{}
	for i, v := range vs {
		byID[ds[i].MessageID] = v.Kind.String() + " " + v.Reason
	}
	want := map[string]string{"m-1": "ack ", "m-2": "retry duplicate key", "m-3": "park dead-lettered by the handler: bad row"}
	for id, w := range want {
		if byID[id] != w {
			t.Errorf("%s: %q, want %q", id, byID[id], w)
		}
	}
	if got := tr.actions(); strings.Count(got, "ack") != 3 || !strings.Contains(got, "send jobs.retry") || !strings.Contains(got, "send dl") {
		t.Errorf("actions = %q, want one retry copy, one dead letter, and three acks (the originals)", got)
	}
}

func TestBatchFailuresNamingAMessageOutsideTheBatchFailsEveryMessage(t *testing.T) {
	p := &batchProbe{err: func([]*job) error {
		var f runtime.BatchFailures
		f.Fail(5, errBoom)
		return &f
	}}
	c, _ := newConsumer(batchSub(2, p.handler(runtime.Policy{MaxAttempts: 3})), runtime.RabbitMQ)
	for _, v := range handleAll(c, []*adapter.Delivery{jobDelivery(1, 1), jobDelivery(2, 1)}) {
		if v.Kind != adapter.VerdictRetry || !strings.Contains(v.Reason, "names message 5, and its batch has messages 0 to 1") {
			t.Errorf("verdict %v %q, want a retry naming the index outside the batch", v.Kind, v.Reason)
		}
	}
}

func TestBatchPoisonNeverEntersABatch(t *testing.T) {
	p := &batchProbe{}
	sub := batchSub(2, p.handler(runtime.Policy{DeadLetter: "dl"}))
	sub.MaxPayloadBytes = 64
	c, _ := newConsumer(sub, runtime.RabbitMQ)
	bad := jobDelivery(9, 1)
	bad.Body = []byte(`{"id":"nine"}`)
	unknown := jobDelivery(8, 1)
	unknown.Type = "Invoice"
	big := jobDelivery(7, 1)
	big.Body = []byte(`{"id":7,"pad":"` + strings.Repeat("x", 100) + `"}`)
	vs := handleAll(c, []*adapter.Delivery{bad, unknown, big, jobDelivery(1, 1), jobDelivery(2, 1)})
	for i, v := range vs[:3] {
		if v.Kind != adapter.VerdictPark || !v.Poison || v.Queue != "dl" {
			t.Errorf("poison %d: verdict %+v, want parked as poison on dl", i, v)
		}
	}
	calls := p.callIDs()
	if len(calls) != 1 || len(calls[0]) != 2 {
		t.Errorf("calls = %v, want one call with messages 1 and 2 only", calls)
	}
}

func TestBatchMiddlewareWrapsTheBatchCall(t *testing.T) {
	p := &batchProbe{}
	sub := batchSub(2, p.handler(runtime.Policy{MaxAttempts: 2}))
	var seen []string
	var mu sync.Mutex
	sub.Middleware = []runtime.Middleware{func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%T %d %s", msg, len(md.Batch), md.MessageType))
		mu.Unlock()
		return next(ctx, msg, md)
	}}
	c, _ := newConsumer(sub, runtime.RabbitMQ)
	handleAll(c, []*adapter.Delivery{jobDelivery(1, 1), jobDelivery(2, 1)})
	if len(seen) != 1 || seen[0] != "[]*adapter_test.job 2 Job" {
		t.Errorf("middleware saw %q, want one call with a []*job and the Metadata of 2", seen)
	}
	if calls := p.callIDs(); len(calls) != 1 {
		t.Errorf("calls = %v, want one", calls)
	}
}

func TestBatchCallsRunConcurrencyAtATime(t *testing.T) {
	var running, most int
	var mu sync.Mutex
	h := runtime.HandleBatch[job]("Job", runtime.Policy{}, nil, func(ctx context.Context, jobs []job) error {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		return nil
	})
	sub := batchSub(2, h)
	sub.Concurrency = 2
	c, _ := newConsumer(sub, runtime.RabbitMQ)
	var ds []*adapter.Delivery
	for i := range 12 {
		ds = append(ds, jobDelivery(uint64(i), 1))
	}
	handleAll(c, ds)
	if most != 2 {
		t.Errorf("at most %d batch calls ran at once, want concurrency=2", most)
	}
}

func TestBatchTimeoutBoundsTheBatchCall(t *testing.T) {
	h := runtime.HandleBatch[job]("Job", runtime.Policy{MaxAttempts: 2, Timeout: 10 * time.Millisecond}, nil, func(ctx context.Context, jobs []job) error {
		<-ctx.Done()
		return ctx.Err()
	})
	c, _ := newConsumer(batchSub(2, h), runtime.RabbitMQ)
	for _, v := range handleAll(c, []*adapter.Delivery{jobDelivery(1, 1), jobDelivery(2, 1)}) {
		if v.Kind != adapter.VerdictRetry || v.Reason != "handler timed out after 10ms" {
			t.Errorf("verdict %v %q, want a retry for the timeout", v.Kind, v.Reason)
		}
	}
}
