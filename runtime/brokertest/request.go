package brokertest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

// A handler that replies answers a request (RabbitMQ): the caller gets the
// reply through the transport's Broker, a runtime.Requester; a request
// retried and then parked gets one error reply naming the dead-letter
// queue and carrying the handler's error. On ZeroMQ the App refuses such
// a handler: request/reply needs RabbitMQ.
func requestIsAnswered(t testing.TB, tr Transport) {
	q := uniqueName(t)
	dl := q + ".dead"
	f := newFixture(t, tr, q, dl)
	var got handlerCalls[Job]
	sub := f.subscription(q, runtime.HandleReply[Job, Invoice]("Job", "Invoice", f.policy(2, dl),
		nil, func(ctx context.Context, j *Job, md runtime.Metadata) (Invoice, error) {
			got.add(ctx, j, md)
			if j.ID == 2 {
				return Invoice{}, runtime.RetryAfter(f.tr.RetryDelay, errFailed)
			}
			return Invoice{ID: j.ID, AmountCents: 100 * j.ID}, nil
		}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*tr.Timeout)
	defer cancel()
	if tr.Kind == runtime.ZeroMQ {
		f.app.Mount(f.spy, sub)
		if err := f.app.Run(ctx); err == nil || !strings.Contains(err.Error(), "request/reply needs RabbitMQ") {
			t.Fatalf("Run = %v, want the error that request/reply needs RabbitMQ", err)
		}
		return
	}
	r, ok := f.inst.Broker.(runtime.Requester)
	if !ok {
		t.Fatalf("brokertest: the %T of a RabbitMQ transport is no runtime.Requester: request/reply needs its Request method", f.inst.Broker)
	}
	f.start(sub)

	inv, err := runtime.Request[Invoice](ctx, r, runtime.Queue(q), "Job", Job{ID: 1})
	if err != nil || inv != (Invoice{ID: 1, AmountCents: 100}) {
		t.Fatalf("the request got %+v, %v; want its invoice", inv, err)
	}
	res := make(chan error, 1)
	go func() {
		_, err := runtime.Request[Invoice](ctx, r, runtime.Queue(q), "Job", Job{ID: 2})
		res <- err
	}()
	f.eventually("the error reply of the parked request", func() bool { return len(res) > 0 })
	err = <-res
	var re *runtime.RemoteError
	if !errors.Is(err, runtime.ErrParked) || !errors.As(err, &re) || re.DeadLetter != dl || !strings.Contains(re.Reason, "failed on attempt 2 of 2: "+errFailed.Error()) {
		t.Fatalf("the failing request got %v, want a RemoteError parked on %s with the handler's error", err, dl)
	}
	f.eventually("the request to be parked", func() bool { return f.stats(q).Parked >= 1 })
	f.stop()
	if st := f.stats(q); st.Delivered != 3 || st.Acked != 1 || st.Retried != 1 || st.Parked != 1 {
		t.Errorf("counters %+v, want 3 delivered, 1 acked, 1 retried, 1 parked", st)
	}
}
