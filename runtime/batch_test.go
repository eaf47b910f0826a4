package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

func batchHandler() runtime.Handler {
	return runtime.HandleBatch[job]("Job", runtime.Policy{}, nil, func(context.Context, []job) error { return nil })
}

func TestBatchFailures(t *testing.T) {
	var f runtime.BatchFailures
	if f.Err() != nil {
		t.Fatalf("empty BatchFailures: Err() = %v, want nil", f.Err())
	}
	f.Fail(4, errors.New("duplicate key"))
	f.Fail(1, nil)
	if err := f.Err(); err == nil || err.Error() != "2 of the batch's messages failed; message 1: failed in its batch; message 4: duplicate key" {
		t.Errorf("Err() = %v", err)
	}
	if f.Failed(0) != nil || f.Failed(4) == nil {
		t.Errorf("Failed(0) = %v, Failed(4) = %v; want nil and the error", f.Failed(0), f.Failed(4))
	}
	for _, i := range []int{7, 9, 2} {
		f.Fail(i, errors.New("x"))
	}
	if got := f.Error(); !strings.HasSuffix(got, "; and 2 more") {
		t.Errorf("Error() = %q, want the first three and how many more", got)
	}
	var nilF *runtime.BatchFailures
	if nilF.Err() != nil || nilF.Failed(0) != nil || nilF.Indexes() != nil {
		t.Error("a nil *BatchFailures is not empty")
	}
}

func TestHandleBatchShapes(t *testing.T) {
	var got []string
	record := func(s string) { got = append(got, s) }
	hs := []runtime.Handler{
		runtime.HandleBatch[job]("Job", runtime.Policy{}, nil, func(_ context.Context, js []job) error { record("values"); return nil }),
		runtime.HandleBatch[job]("Job", runtime.Policy{}, nil, func(_ context.Context, js []*job) error { record("pointers"); return nil }),
		runtime.HandleBatch[job]("Job", runtime.Policy{}, nil, func(_ context.Context, js []job, mds []runtime.Metadata) error {
			record(mds[0].MessageID)
			return nil
		}),
		runtime.HandleBatch[job]("Job", runtime.Policy{}, nil, func(_ context.Context, js []*job, mds []runtime.Metadata) error {
			return runtime.DeadLetter(errors.New("no"))
		}),
	}
	for i, h := range hs {
		if !h.Batched() {
			t.Fatalf("handler %d is not Batched", i)
		}
		v, err := h.Decode(runtime.JSON{}, []byte(`{"id":3}`))
		if err != nil {
			t.Fatal(err)
		}
		out := h.Call(context.Background(), h.Gather([]any{v}), runtime.Metadata{Batch: []runtime.Metadata{{MessageID: "m-3"}}})
		if want := []runtime.Action{runtime.ActionAck, runtime.ActionAck, runtime.ActionAck, runtime.ActionDeadLetter}[i]; out.Action() != want {
			t.Errorf("handler %d: %v, want %v", i, out, want)
		}
	}
	if strings.Join(got, " ") != "values pointers m-3" {
		t.Errorf("calls = %q", got)
	}
	if single := okHandler("Job", runtime.Policy{}); single.Batched() {
		t.Error("a Handle handler is Batched")
	}
}

// A batch handler decodes each message as HandleJSON does: with the
// generated decoder under JSON, with the codec otherwise.
func TestHandleBatchDecodesAsHandleJSON(t *testing.T) {
	calls := 0
	h := runtime.HandleBatch[item]("Item", runtime.Policy{}, func(body []byte, v *item) bool {
		calls++
		v.N, v.S = 1, "fast"
		return true
	}, func(context.Context, []item) error { return nil })
	v, err := h.Decode(runtime.JSON{}, []byte(`{"n":2,"s":"std"}`))
	if err != nil || *v.(*item) != (item{1, "fast"}) || calls != 1 {
		t.Fatalf("Decode = %+v, %v after %d calls; want the generated decoder's value", v, err, calls)
	}
	v, err = h.Decode(upperCodec{}, []byte(`{"n":3,"s":"abc"}`))
	if err != nil || *v.(*item) != (item{3, "ABC"}) || calls != 1 {
		t.Fatalf("Decode = %+v, %v after %d calls; want the codec's value, the generated decoder left alone", v, err, calls)
	}
}

// A batch handler called with anything but the []*T Gather makes (a
// middleware that swapped it) fails, saying what it got; Gather on a
// handler of one message panics, naming it.
func TestBatchHandlerTakesOnlyABatch(t *testing.T) {
	called := false
	h := runtime.HandleBatch[job]("Job", runtime.Policy{}, nil, func(context.Context, []*job) error { called = true; return nil })
	out := h.Call(context.Background(), &job{}, runtime.Metadata{})
	if out.Err() == nil || out.Err().Error() != "runtime: a batch handler of Job was given a *runtime_test.job, not a []*Job" || called {
		t.Errorf("a batch handler given one message: %v (called %v), want a failure naming what it got", out, called)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "Gather on the handler of Job, which takes one message at a time") {
			t.Errorf("Gather on a single handler: recovered %v, want a panic naming it", r)
		}
	}()
	single := okHandler("Job", runtime.Policy{})
	single.Gather([]any{&job{}})
}

func TestValidateBatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		sub  runtime.Subscription
		kind runtime.BrokerKind
		want string // "" for valid
	}{
		{"valid", runtime.Subscription{BatchSize: 100, BatchWait: time.Second, Handlers: []runtime.Handler{batchHandler()}}, runtime.RabbitMQ, ""},
		{"valid with prefetch", runtime.Subscription{BatchSize: 100, Prefetch: 100, Handlers: []runtime.Handler{batchHandler()}}, runtime.RabbitMQ, ""},
		{"batch handler without batch_size", runtime.Subscription{Handlers: []runtime.Handler{batchHandler()}}, runtime.RabbitMQ, "takes a batch, but the subscription sets no batch_size"},
		{"batch_size on a single handler", runtime.Subscription{BatchSize: 5, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, runtime.ZeroMQ, "batch_size is set, but the handler for \"Job\" takes one message"},
		{"negative", runtime.Subscription{BatchSize: -1, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, runtime.ZeroMQ, "batch_size is -1"},
		{"wait without size", runtime.Subscription{BatchWait: time.Second, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, runtime.ZeroMQ, "batch_wait has no effect without batch_size"},
		{"negative wait", runtime.Subscription{BatchSize: 2, BatchWait: -time.Second, Handlers: []runtime.Handler{batchHandler()}}, runtime.ZeroMQ, "batch_wait is -1s"},
		{"above prefetch", runtime.Subscription{BatchSize: 100, Prefetch: 50, Handlers: []runtime.Handler{batchHandler()}}, runtime.RabbitMQ, "batch_size=100 is above prefetch=50"},
		{"prefetch is RabbitMQ's", runtime.Subscription{BatchSize: 100, Prefetch: 50, Handlers: []runtime.Handler{batchHandler()}}, runtime.ZeroMQ, ""},
		{"raises the prefetch too far", runtime.Subscription{BatchSize: 40000, Handlers: []runtime.Handler{batchHandler()}}, runtime.RabbitMQ, "raises the prefetch to 80000"},
		{"two handlers", runtime.Subscription{BatchSize: 10, Handlers: []runtime.Handler{batchHandler(), okHandler("Other", runtime.Policy{})}}, runtime.RabbitMQ, "a batch subscription has one handler, and this one has 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.sub.Name = "rows"
			err := tc.sub.Validate(tc.kind)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate: %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestWorkersOfABatchSubscription(t *testing.T) {
	s := runtime.Subscription{BatchSize: 100, Concurrency: 2}
	if got := s.Workers(); got != 300 {
		t.Errorf("Workers() = %d, want 300: two calls' batches and the one filling", got)
	}
	if size, wait := s.Batch(); size != 100 || wait != runtime.DefaultBatchWait {
		t.Errorf("Batch() = %d, %v", size, wait)
	}
}
