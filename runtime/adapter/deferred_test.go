package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// deferring is a Transport that reports each copy's outcome only when the
// test says, as RabbitMQ does once the broker confirms: Send returns at
// once.
type deferring struct {
	recorder
	mu      sync.Mutex
	pending []func(error)
}

func (t *deferring) Send(_ context.Context, _ *adapter.Delivery, cp *adapter.Copy, done func(error)) {
	_ = t.record("send " + cp.Queue)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending = append(t.pending, done)
}

// report calls the oldest outcome not yet reported with err.
func (t *deferring) report(err error) {
	t.mu.Lock()
	done := t.pending[0]
	t.pending = t.pending[1:]
	t.mu.Unlock()
	done(err)
}

func deferredConsumer(sub *runtime.Subscription) (*adapter.Consumer, *deferring) {
	tr := &deferring{}
	return adapter.NewConsumer(sub, runtime.Env{}, adapter.Rules{Kind: runtime.RabbitMQ}, tr), tr
}

// A copy whose outcome comes after Send returned frees the handler at
// once: Handle returns with nothing settled, and the original is settled
// (and the verdict counted) when the outcome arrives.
func TestACopyReportedLaterIsSettledThen(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome error
		settled string
		retried int64
		failed  int64
	}{
		{"confirmed: ack", nil, "send jobs.retry, ack", 1, 0},
		{"returned: reject", fmt.Errorf("returned: %w", adapter.ErrUnroutable), "send jobs.retry, reject", 0, 1},
		{"refused: requeue", errors.New("nacked"), "send jobs.retry, requeue", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, tr := deferredConsumer(failing(runtime.Policy{MaxAttempts: 2}))
			v, err := c.Handle(t.Context(), delivery(1))
			if v.Kind != adapter.VerdictRetry || err != nil {
				t.Fatalf("Handle = %v, %v; want a retry, settled later", v.Kind, err)
			}
			if got := tr.actions(); got != "send jobs.retry" {
				t.Fatalf("actions %q before the outcome, want the send alone", got)
			}
			if m := c.Metrics(); m.Retried.Load() != 0 || m.Failed.Load() != 0 {
				t.Fatal("the verdict was counted before the outcome came")
			}
			tr.report(tc.outcome)
			if got := tr.actions(); got != tc.settled {
				t.Errorf("actions %q, want %q", got, tc.settled)
			}
			if m := c.Metrics(); m.Retried.Load() != tc.retried || m.Failed.Load() != tc.failed {
				t.Errorf("retried %d, failed %d; want %d, %d", m.Retried.Load(), m.Failed.Load(), tc.retried, tc.failed)
			}
		})
	}
}

// WaitCopies waits for the outcomes not yet reported, or for its context.
func TestWaitCopiesWaitsForOutcomesStillAwaited(t *testing.T) {
	c, tr := deferredConsumer(failing(runtime.Policy{MaxAttempts: 2}))
	c.Handle(t.Context(), delivery(1))
	c.Handle(t.Context(), delivery(1))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := c.WaitCopies(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitCopies with two outcomes awaited = %v, want the deadline", err)
	}
	tr.report(nil)
	tr.report(nil)
	if err := c.WaitCopies(t.Context()); err != nil {
		t.Errorf("WaitCopies once both are reported = %v", err)
	}
	if got := tr.actions(); got != "send jobs.retry, send jobs.retry, ack, ack" {
		t.Errorf("actions %q", got)
	}
}

// A Transport that reports an outcome twice settles the original once.
func TestASecondOutcomeIsIgnored(t *testing.T) {
	var again func(error)
	tr := &twice{onSend: func(done func(error)) { done(nil); again = done }}
	c := adapter.NewConsumer(failing(runtime.Policy{MaxAttempts: 2}), runtime.Env{}, adapter.Rules{Kind: runtime.RabbitMQ}, tr)
	if _, err := c.Handle(t.Context(), delivery(1)); err != nil {
		t.Fatal(err)
	}
	again(errors.New("late"))
	if got := tr.actions(); got != "ack" {
		t.Errorf("actions %q, want one ack", got)
	}
	if m := c.Metrics(); m.Retried.Load() != 1 || m.Failed.Load() != 0 {
		t.Errorf("retried %d, failed %d", m.Retried.Load(), m.Failed.Load())
	}
}

type twice struct {
	recorder
	onSend func(done func(error))
}

func (t *twice) Send(_ context.Context, _ *adapter.Delivery, _ *adapter.Copy, done func(error)) {
	t.onSend(done)
}
